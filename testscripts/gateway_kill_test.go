package testscripts

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestGatewayKilledUnderLoadKeepsEveryAcknowledgedAdd SIGKILLs a gateway
// while 32 clients add instructions, so that commits shared by many adds
// are cut at every stage: each add that was answered 201 is in the store
// afterwards, and no add is in it twice.
func TestGatewayKilledUnderLoadKeepsEveryAcknowledgedAdd(t *testing.T) {
	home := t.TempDir()
	const token = "kill-test-token"
	addrFile := filepath.Join(home, "addr")
	gw := exec.Command("lm", "gateway", "--addr", "127.0.0.1:0", "--addr-file", addrFile)
	gw.Env = append(lmEnv(home), "LM_API_TOKEN="+token)
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		gw.Process.Kill()
		gw.Wait()
	}()
	var addr string
	waitFor(t, func() bool {
		b, err := os.ReadFile(addrFile)
		addr = strings.TrimSpace(string(b))
		return err == nil && addr != ""
	})

	const clients, perClient = 32, 500
	var (
		mu           sync.Mutex
		acknowledged []string
		answered     atomic.Int64
		wg           sync.WaitGroup
	)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range perClient {
				content := fmt.Sprintf("add %d-%d", c, n)
				req, _ := http.NewRequest("POST", "http://"+addr+"/api/instructions", strings.NewReader(fmt.Sprintf(`{"content":%q}`, content)))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				res, err := client.Do(req)
				if err != nil {
					return // the gateway is gone
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusCreated {
					t.Errorf("add %q: status %d", content, res.StatusCode)
					return
				}
				mu.Lock()
				acknowledged = append(acknowledged, content)
				mu.Unlock()
				answered.Add(1)
			}
		}()
	}
	// Kill it in full flight: well after the first commits, long before
	// the clients run out of adds.
	waitFor(t, func() bool { return answered.Load() >= 400 })
	gw.Process.Signal(syscall.SIGKILL)
	gw.Wait()
	wg.Wait()

	out, _ := runLM(t, home, "", "queue", "list", "--status", "all", "-r", "--jq", ".items[].content")
	stored := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		stored[line]++
	}
	for content, n := range stored {
		if n > 1 {
			t.Errorf("%q is stored %d times", content, n)
		}
	}
	for _, content := range acknowledged {
		if stored[content] == 0 {
			t.Errorf("%q was acknowledged with 201 but is not in the store", content)
		}
	}
	if len(acknowledged) >= clients*perClient {
		t.Fatalf("every add was answered before the kill: it hit no commit in flight")
	}
	if check, code := runLM(t, home, "", "store", "check", "-r", "--jq", ".ok"); code != 0 || check != "true\n" {
		t.Fatalf("store check after the kill: %q (exit %d)", check, code)
	}
	t.Logf("%d adds acknowledged before the kill, %d stored", len(acknowledged), len(stored))
}
