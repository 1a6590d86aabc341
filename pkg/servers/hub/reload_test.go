package hub

import (
	"os"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/servers"
)

func rewrite(t *testing.T, h *Hub, cfg string) {
	t.Helper()
	if err := os.WriteFile(servers.Path(h.home), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.Reload(); err != nil {
		t.Fatal(err)
	}
}

// Saving servers.json restarts only the servers whose entries changed:
// optional settings are pointers, and an entry with one used to look
// changed on every save, so editing another server's description killed
// its calls in flight.
func TestSavingRestartsOnlyChangedServers(t *testing.T) {
	config := func(descB, argA string) string {
		return `{"mcpServers": {
			"a": {` + childServer(t, "plain", nil) + `, "args": ["` + argA + `"],
				"auto_start": true, "restart_on_failure": false, "max_restarts": 2, "tools": {"allow": ["echo"]}, "health_check_interval": 60},
			"b": {` + childServer(t, "plain", nil) + `, "auto_start": true, "description": "` + descB + `"}}}`
	}
	h, _ := startHub(t, config("first", "x"))
	pidA := awaitState(t, h, "a", servers.Running, 20*time.Second).Pid
	awaitState(t, h, "b", servers.Running, 20*time.Second)

	rewrite(t, h, config("second", "x"))
	time.Sleep(300 * time.Millisecond)
	if s := awaitState(t, h, "a", servers.Running, 20*time.Second); s.Pid != pidA {
		t.Fatalf("editing b's description restarted a: pid %d → %d", pidA, s.Pid)
	}

	rewrite(t, h, config("second", "y"))
	deadline := time.Now().Add(20 * time.Second)
	for {
		if s := h.child("a").status(); s.State == servers.Running && s.Pid != pidA {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("changing a's own args did not restart it")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The hub-wide settings apply as they are saved.
func TestSettingsApplyOnSave(t *testing.T) {
	entry := `"a": {` + childServer(t, "plain", nil) + `}`
	h, _ := startHub(t, `{"mcpServers": {`+entry+`}}`)
	rewrite(t, h, `{"settings": {"cache_max_size": 7, "cache_ttl": 9, "cb_failure_threshold": 4, "cb_recovery_timeout": 11},
		"mcpServers": {`+entry+`}}`)
	if st := h.CacheStats(); st.MaxSize != 7 || st.TTLSec != 9 {
		t.Errorf("cache after the save: max %d, ttl %gs", st.MaxSize, st.TTLSec)
	}
	// The breaker opens at the fourth consecutive failure, not the default.
	b := h.child("a").breaker
	for range 3 {
		b.Failure()
	}
	if state, _, _ := b.State(); state != "CLOSED" {
		t.Errorf("after 3 failures with a threshold of 4 the breaker is %s", state)
	}
	b.Failure()
	if state, _, retryAt := b.State(); state != "OPEN" || time.Until(retryAt) < 10*time.Second {
		t.Errorf("after 4 failures: %s, retry at %s (recovery 11 s)", state, retryAt)
	}
}

// max_restarts bounds a crash loop: a server that ran healthy for the
// stable period before it crashed starts a new budget, so crashes hours
// apart never add up to "gave up". The child crashes 2 s after it starts,
// so even on a loaded machine it is seen running for longer than the
// shortened stable period before each crash.
func TestRestartBudgetResetsAfterAStableRun(t *testing.T) {
	defer func(p time.Duration) { stablePeriod = p }(stablePeriod)
	stablePeriod = 200 * time.Millisecond
	h, _ := startHub(t, `{"mcpServers": {"flaky": {`+childServer(t, "crash-after", map[string]string{"CRASH_AFTER": "2s"})+
		`, "auto_start": true, "max_restarts": 1, "restart_delay": 0.05, "health_check_interval": 60}}}`)
	seen := track(t, h, "flaky")
	deadline := time.Now().Add(30 * time.Second)
	for {
		restarts := 0
		for _, s := range seen() {
			if s.State == servers.Restarting {
				restarts++
			}
			if s.State == servers.Failed {
				t.Fatalf("a server that crashed after stable runs gave up: %+v", s)
			}
		}
		if restarts >= 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("saw %v, want three restarts", states(seen()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
