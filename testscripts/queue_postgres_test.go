package testscripts

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/queue/pgstore"
	"lmtool.dev/lm/pkg/queue/pgstore/pgtest"
)

// teamEnv is the environment of lm processes on one machine of a team:
// their own LM_HOME, the queue in the database at url.
func teamEnv(home, url string) []string {
	return append(lmEnv(home), "LM_STORE="+url)
}

// teamDatabase starts a private cluster, migrates a new database with
// lm store migrate and returns its URL.
func teamDatabase(t *testing.T) string {
	t.Helper()
	_, url := teamCluster(t)
	return url
}

// teamCluster is teamDatabase with the cluster, for a test that stops and
// starts it.
func teamCluster(t *testing.T) (*pgtest.Cluster, string) {
	t.Helper()
	cluster := pgtest.Own(t)
	url := cluster.URL(t)
	out, _ := runLMEnv(t, teamEnv(t.TempDir(), url), "", "store", "migrate", "-r", "--jq", `"\(.from) \(.to)"`)
	if out != fmt.Sprintf("0 %d\n", pgstore.SchemaVersion) {
		t.Fatalf("lm store migrate: %q", out)
	}
	return cluster, url
}

// TestPostgresExactlyOnceAcrossProcesses races 2 producer processes adding
// 2,000 instructions against 3 `lm mcp` processes with 8 agents each and
// 2 `lm queue next` loops, each on its own LM_HOME as on its own machine,
// all on one database: every instruction is delivered exactly once.
func TestPostgresExactlyOnceAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process race: not in -short")
	}
	url := teamDatabase(t)
	runLMEnv(t, teamEnv(t.TempDir(), url), "", "queue", "config", "default_wait_seconds=1")
	const producers, perProducer = 2, 1000

	race := newExactlyOnceRace()
	for i := range 3 {
		c := startMCPEnv(t, teamEnv(t.TempDir(), url), "", fmt.Sprintf("mcp-%d", i))
		for j := range 8 {
			race.mcpConsumer(t, c, fmt.Sprintf("mcp-%d-%d", i, j))
		}
	}
	for i := range 2 {
		race.cliConsumer(t, teamEnv(t.TempDir(), url), fmt.Sprintf("cli-%d", i))
	}
	for p := range producers {
		race.producer(t, teamEnv(t.TempDir(), url), p, perProducer, 40)
	}
	race.check(t, teamEnv(t.TempDir(), url), producers*perProducer)
}

// TestPostgresWaiterWakesOnAnotherMachinesAdd: a `lm queue next` waiting
// up to an hour on one LM_HOME takes an instruction another LM_HOME adds,
// woken by NOTIFY, long before its wait would end.
func TestPostgresWaiterWakesOnAnotherMachinesAdd(t *testing.T) {
	url := teamDatabase(t)
	adder := teamEnv(t.TempDir(), url)
	runLMEnv(t, adder, "", "queue", "config", "default_wait_seconds=3600")
	waiter := exec.Command("lm", "queue", "next", "--agent-id", "far")
	waiter.Env = teamEnv(t.TempDir(), url)
	var stdout strings.Builder
	waiter.Stdout = &stdout
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	defer waiter.Process.Kill()
	waitFor(t, func() bool {
		out, _ := runLMEnv(t, adder, "", "queue", "status", "-r", "--jq", `.agents[] | select(.agent_id=="far") | .waiting`)
		return strings.TrimSpace(out) == "true"
	})
	runLMEnv(t, adder, "", "queue", "add", "from afar")
	if err := waiter.Wait(); err != nil {
		t.Fatalf("waiter: %v", err)
	}
	var got nextResult
	if err := json.Unmarshal([]byte(stdout.String()), &got); err != nil || got.Instruction == nil || got.Instruction.Content != "from afar" {
		t.Fatalf("waiter printed %q (%v)", stdout.String(), err)
	}
}

// TestPostgresPrintedDeliveryIsAcknowledged: a `lm queue next` that
// printed its instruction and exited has acknowledged it, so the consumed
// instruction is not marked delivery_unconfirmed although its consumer is
// gone (TestPostgresKilledClaimersLeaveNothingBetween has the other side).
func TestPostgresPrintedDeliveryIsAcknowledged(t *testing.T) {
	url := teamDatabase(t)
	env := teamEnv(t.TempDir(), url)
	runLMEnv(t, env, "", "queue", "config", "default_wait_seconds=0")
	runLMEnv(t, env, "", "queue", "add", "printed")
	if out, _ := runLMEnv(t, teamEnv(t.TempDir(), url), "", "queue", "next", "-r", "--jq", ".instruction.content"); out != "printed\n" {
		t.Fatalf("lm queue next printed %q", out)
	}
	out, _ := runLMEnv(t, env, "", "queue", "list", "--status", "consumed", "-r", "--jq", `.items[] | "\(.content) \(.delivery_unconfirmed // false)"`)
	if out != "printed false\n" {
		t.Fatalf("after the delivery was printed: %q", out)
	}
}

// TestPostgresKilledClaimersLeaveNothingBetween SIGKILLs adders and
// claimers at random moments: every instruction ends pending, or consumed
// with its agent and time, and none is both lost and unlisted.
func TestPostgresKilledClaimersLeaveNothingBetween(t *testing.T) {
	if testing.Short() {
		t.Skip("kill loop: not in -short")
	}
	url := teamDatabase(t)
	env := teamEnv(t.TempDir(), url)
	runLMEnv(t, env, "", "queue", "config", "default_wait_seconds=1")
	runLMEnv(t, env, "", "queue", "add", "first")
	for round := range 20 {
		startThenKill(t, env, 80*time.Millisecond,
			exec.Command("lm", "queue", "add", fmt.Sprintf("single %d", round)),
			exec.Command("lm", "queue", "next", "--agent-id", fmt.Sprintf("k%d-1", round)),
			exec.Command("lm", "queue", "next", "--agent-id", fmt.Sprintf("k%d-2", round)))
	}
	list, _ := runLMEnv(t, env, "", "queue", "list", "--status", "all")
	var items struct {
		Items []struct {
			Content    string  `json:"content"`
			Status     string  `json:"status"`
			ConsumedAt *string `json:"consumed_at"`
			Agent      *string `json:"consumed_by_agent_id"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(list), &items); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, it := range items.Items {
		if seen[it.Content] {
			t.Errorf("%q listed twice", it.Content)
		}
		seen[it.Content] = true
		switch it.Status {
		case "pending":
			if it.ConsumedAt != nil || it.Agent != nil {
				t.Errorf("pending %q carries a consumer", it.Content)
			}
		case "consumed":
			if it.ConsumedAt == nil || it.Agent == nil {
				t.Errorf("consumed %q lacks its agent or time", it.Content)
			}
		default:
			t.Errorf("%q is %q", it.Content, it.Status)
		}
	}
	if !seen["first"] {
		t.Error("the instruction added before the kills is gone")
	}
}

// TestPostgresPasswordNeverInArgvNorMessages: a --store URL with a
// password is refused without echoing it, and an unreachable database is
// exit 6 with the URL shown masked.
func TestPostgresPasswordNeverInArgvNorMessages(t *testing.T) {
	home := t.TempDir()
	cmd := exec.Command("lm", "--store", "postgres://lm:hunter2@127.0.0.1:1/lm", "queue", "list")
	cmd.Env = lmEnv(home)
	out, err := cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 2 || strings.Contains(string(out), "hunter2") || !strings.Contains(string(out), "PGPASSWORD") {
		t.Fatalf("password in --store: %v %s", err, out)
	}
	// The password may also be a parameter of the URL, as may the client
	// key's (sslpassword): no message shows either.
	cmd = exec.Command("lm", "--store", "postgres://lm@127.0.0.1:1/lm?password=hunter2", "queue", "list")
	cmd.Env = lmEnv(home)
	out, err = cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 2 || strings.Contains(string(out), "hunter2") || !strings.Contains(string(out), "PGPASSWORD") {
		t.Fatalf("password parameter in --store: %v %s", err, out)
	}
	for _, url := range []string{
		"postgres://lm:hunter2@127.0.0.1:1/lm?connect_timeout=2",
		"postgres://lm@127.0.0.1:1/lm?connect_timeout=2&password=hunter2",
		"postgres://lm@127.0.0.1:1/lm?sslpassword=hunter2&connect_timeout=2",
	} {
		for _, args := range [][]string{{"queue", "list"}, {"store", "queue"}, {"store", "info"}, {"store", "check"},
			{"store", "backup", filepath.Join(home, "backup.db")}} {
			cmd = exec.Command("lm", args...)
			cmd.Env = append(lmEnv(home), "LM_STORE="+url)
			out, err = cmd.CombinedOutput()
			if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 6 || strings.Contains(string(out), "hunter2") || !strings.Contains(string(out), "unavailable") {
				t.Fatalf("lm %s on an unreachable database: %v %s", strings.Join(args, " "), err, out)
			}
			if n := strings.Count(string(out), "connection refused"); n != 1 {
				t.Errorf("lm %s on an unreachable database says why %d times (once per attempt): %s", strings.Join(args, " "), n, out)
			}
			if _, err := os.Stat(filepath.Join(home, "backup.db")); err == nil {
				t.Fatalf("lm %s on an unreachable database wrote the local store's copy", strings.Join(args, " "))
			}
		}
	}
}

// sseEvent is one event of /api/events.
type sseEvent struct{ id, data string }

// readEvents reads /api/events from base with the request headers given
// until an event's data contains want, and returns the events up to it.
func readEvents(t *testing.T, base, token, query string, header map[string]string, want string) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/events"+query, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			cur.data += strings.TrimPrefix(line, "data: ")
		case line == "":
			if cur.data != "" {
				events = append(events, cur)
				if strings.Contains(cur.data, want) {
					return events
				}
			}
			cur = sseEvent{}
		}
	}
	t.Fatalf("/api/events on %s ended without %q (%v): %+v", base, want, sc.Err(), events)
	return nil
}

// TestPostgresGatewaysShareOneEventFeed: two gateways on two LM_HOMEs and
// one database. An add through one shows on the other's /api/events, live
// and on catch-up, and a client resumes on one gateway with the
// Last-Event-ID it got from the other, without a resync.
func TestPostgresGatewaysShareOneEventFeed(t *testing.T) {
	url := teamDatabase(t)
	_, a, tokenA := gatewayIn(t, teamEnv(t.TempDir(), url), "token-a")
	_, b, tokenB := gatewayIn(t, teamEnv(t.TempDir(), url), "token-b")

	live := make(chan []sseEvent, 1)
	go func() { live <- readEvents(t, a, tokenA, "", nil, "made live on B") }()
	// The stream on A is open once A has served a request after it; give
	// it the add on B until A's stream carries it.
	deadline := time.Now().Add(20 * time.Second)
	var seen []sseEvent
	for i := 0; seen == nil; i++ {
		if resp := gatewayRequest(t, "POST", b+"/api/instructions", tokenB, fmt.Sprintf(`{"content": "made live on B %d"}`, i)); resp.StatusCode != 201 {
			t.Fatalf("add on B: %s", resp.Status)
		}
		select {
		case seen = <-live:
		case <-time.After(500 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("A's event stream never carried an add made on B")
			}
		}
	}
	first := seen[len(seen)-1]

	// Catch-up from the database: readEvents fails unless it comes.
	readEvents(t, a, tokenA, "?since=0", nil, "made live on B 0")

	var status struct {
		StoreID string `json:"store_id"`
	}
	resp := gatewayRequest(t, "GET", a+"/api/status", tokenA, "")
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil || status.StoreID == "" {
		t.Fatalf("status on A: %v %+v", err, status)
	}
	gatewayRequest(t, "POST", a+"/api/instructions", tokenA, `{"content": "made on A after"}`)
	resumed := readEvents(t, b, tokenB, "", map[string]string{"Last-Event-ID": first.id, "Last-Event-Store": status.StoreID}, "made on A after")
	for _, e := range resumed {
		if strings.Contains(e.data, "latest_event_id") {
			t.Fatalf("resuming on B with A's id %s was a resync: %+v", first.id, resumed)
		}
		if e.id != "" && e.id <= first.id && len(e.id) == len(first.id) {
			t.Fatalf("resuming after %s on B replayed %s: %+v", first.id, e.id, resumed)
		}
	}
}

// TestPostgresGatewayReportsUnreachableDatabase: a gateway whose database
// cannot be reached answers the queue's routes with 503 and the URL masked.
func TestPostgresGatewayReportsUnreachableDatabase(t *testing.T) {
	env := append(lmEnv(t.TempDir()), "LM_STORE=postgres://lm:hunter2@127.0.0.1:1/lm?connect_timeout=2")
	_, base, token := gatewayIn(t, env, "token")
	resp := gatewayRequest(t, "GET", base+"/api/instructions", token, "")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || strings.Contains(string(body), "hunter2") || !strings.Contains(string(body), "unavailable") {
		t.Fatalf("%s %s", resp.Status, body)
	}
}

// TestPostgresStoreFromConfig: [store] url in config.toml points lm at the
// database; a password there must be a ${secret:NAME} reference, and its
// value shows in no message.
func TestPostgresStoreFromConfig(t *testing.T) {
	url := teamDatabase(t)
	home := t.TempDir()
	writeConfig := func(table string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(table), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeConfig(fmt.Sprintf("[store]\nurl = %q\n", url))
	runLM(t, home, "", "queue", "add", "configured")
	// lm store queue says where the queue is, the password masked.
	filter := fmt.Sprintf(`"\(.backend) \(.schema_version) \(.pending_count) \(.where == %q)"`, url)
	if out, _ := runLM(t, home, "", "store", "queue", "-r", "--jq", filter); out != fmt.Sprintf("postgres %d 1 true\n", pgstore.SchemaVersion) {
		t.Fatalf("lm store queue: %q", out)
	}
	out, _ := runLMEnv(t, teamEnv(t.TempDir(), url), "", "queue", "list", "-r", "--jq", ".items[].content")
	if out != "configured\n" {
		t.Fatalf("the add through [store] url is not in the database: %q", out)
	}

	refused := func(table, want string) {
		t.Helper()
		writeConfig(table)
		cmd := exec.Command("lm", "queue", "list")
		cmd.Env = lmEnv(home)
		msg, err := cmd.CombinedOutput()
		if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 2 || strings.Contains(string(msg), "hunter2") || !strings.Contains(string(msg), want) {
			t.Fatalf("%s: %v %s", table, err, msg)
		}
	}
	refused("[store]\nurl = \"postgres://lm:hunter2@db/lm\"\n", "plain file")
	refused(fmt.Sprintf("[store]\nurl = %q\npassword = \"hunter2\"\n", url), "${secret:NAME}")
	refused(fmt.Sprintf("[store]\nurl = %q\npassword = \"${secret:db}\"\n", url), "secret db is")

	// A mistake in [store] leaves the rest of lm working, to mend it.
	runLM(t, home, "hunter2", "servers", "secret", "set", "db", "--file")
	writeConfig("[store]\nurl = \"postgres://lm@127.0.0.1:1/lm?connect_timeout=2\"\npassword = \"${secret:db}\"\n")
	cmd := exec.Command("lm", "queue", "list")
	cmd.Env = lmEnv(home)
	msg, err := cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 6 || strings.Contains(string(msg), "hunter2") || !strings.Contains(string(msg), "lm:xxxxx@") {
		t.Fatalf("unreachable database with a secret password: %v %s", err, msg)
	}
}

// TestPostgresServingProcessKilledUnderLoad: three `lm mcp` processes on
// three LM_HOMEs serve 4 agents each from one database; one is SIGKILLed
// mid-load. The others drain the queue, no instruction reaches two agents,
// and each one the dead process took is consumed with its agent (marked
// delivery_unconfirmed when it may never have reached it), never pending
// and consumed at once nor lost.
func TestPostgresServingProcessKilledUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process kill: not in -short")
	}
	url := teamDatabase(t)
	admin := teamEnv(t.TempDir(), url)
	runLMEnv(t, admin, "", "queue", "config", "default_wait_seconds=1")
	const total = 600
	var lines strings.Builder
	for i := range total {
		fmt.Fprintf(&lines, "%q\n", fmt.Sprintf("job %d", i))
	}
	runLMEnv(t, admin, lines.String(), "queue", "add", "--jsonl")

	var mu sync.Mutex
	delivered := map[string]string{} // content -> agent
	var procs []*exec.Cmd
	kill := sync.OnceFunc(func() { procs[0].Process.Signal(syscall.SIGKILL) })
	var consumers sync.WaitGroup
	for i := range 3 {
		c, proc := startMCPProcess(t, teamEnv(t.TempDir(), url), "", fmt.Sprintf("mcp-%d", i))
		procs = append(procs, proc)
		for j := range 4 {
			agent := fmt.Sprintf("mcp-%d-%d", i, j)
			consumers.Go(func() {
				for {
					r, err := callNextWithin(c, agent)
					if err != nil || r.Instruction == nil {
						return // the killed process's agents, or the queue drained
					}
					mu.Lock()
					if other, twice := delivered[r.Instruction.Content]; twice {
						t.Errorf("%q delivered to %s and %s", r.Instruction.Content, other, agent)
					}
					delivered[r.Instruction.Content] = agent
					n := len(delivered)
					mu.Unlock()
					if n >= total/4 {
						kill()
					}
				}
			})
		}
	}
	consumers.Wait()
	if err := procs[0].Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the first lm mcp was not killed under load: %v", err)
	}

	list, _ := runLMEnv(t, admin, "", "queue", "list", "--status", "all")
	var items struct {
		Items []struct {
			Content     string  `json:"content"`
			Status      string  `json:"status"`
			Agent       *string `json:"consumed_by_agent_id"`
			Unconfirmed bool    `json:"delivery_unconfirmed"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(list), &items); err != nil {
		t.Fatal(err)
	}
	if len(items.Items) != total {
		t.Fatalf("%d instructions listed, want %d", len(items.Items), total)
	}
	for _, it := range items.Items {
		agent, seen := delivered[it.Content]
		switch {
		case it.Status != "consumed" || it.Agent == nil:
			t.Errorf("%q is %s after the survivors drained the queue", it.Content, it.Status)
		case seen && *it.Agent != agent:
			t.Errorf("%q delivered to %s, recorded for %s", it.Content, agent, *it.Agent)
		case !seen && !strings.HasPrefix(*it.Agent, "mcp-0-"):
			t.Errorf("%q consumed by %s, which never reported it", it.Content, *it.Agent)
		case !seen && !it.Unconfirmed:
			t.Errorf("%q, taken by the killed process and never reported, is not marked delivery_unconfirmed", it.Content)
		}
	}
}
