package testscripts

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// lmEnv is the environment of lm processes using the store in home.
func lmEnv(home string) []string {
	return append(os.Environ(), "LM_HOME="+home, "LM_STORE=")
}

func runLM(t *testing.T, home string, stdin string, args ...string) (string, int) {
	t.Helper()
	return runLMEnv(t, lmEnv(home), stdin, args...)
}

// runLMEnv runs lm in env and returns its stdout and exit status, failing
// the test on any exit but 0 and 7.
func runLMEnv(t *testing.T, env []string, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("lm", args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if err != nil {
		exit, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("lm %v: %v", args, err)
		}
		code = exit.ExitCode()
	}
	if code != 0 && code != 7 {
		t.Fatalf("lm %v: exit %d: %s", args, code, stderr.String())
	}
	return string(out), code
}

// startMCP starts `lm mcp` as an MCP client would and initializes a session
// named name.
func startMCP(t *testing.T, home, name string) *client.Client {
	t.Helper()
	return startMCPIn(t, home, "", name)
}

type nextResult struct {
	ResultType  string `json:"result_type"`
	Instruction *struct {
		ID      string `json:"id"`
		Content string `json:"content"`
	} `json:"instruction"`
}

func callNext(ctx context.Context, c *client.Client, agent string) (nextResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = "get_user_request"
	req.Params.Arguments = map[string]any{"agent_id": agent}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return nextResult{}, err
	}
	if res.IsError {
		return nextResult{}, fmt.Errorf("tool error: %v", res.Content)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var r nextResult
	return r, json.Unmarshal(raw, &r)
}

// callNextWithin is callNext with the time a waiting get_user_request may
// take.
func callNextWithin(c *client.Client, agent string) (nextResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return callNext(ctx, c, agent)
}

// exactlyOnceRace races producers adding instructions against consumers
// taking them: each consumer records what it receives and, once the
// producers are done, stops at the first empty answer; check then says
// whether every instruction was delivered exactly once and none lost.
type exactlyOnceRace struct {
	mu        sync.Mutex
	delivered map[string]int
	produced  chan struct{}
	consumers sync.WaitGroup
	producers sync.WaitGroup
}

func newExactlyOnceRace() *exactlyOnceRace {
	return &exactlyOnceRace{delivered: map[string]int{}, produced: make(chan struct{})}
}

func (r *exactlyOnceRace) record(content string) {
	r.mu.Lock()
	r.delivered[content]++
	r.mu.Unlock()
}

// done says whether a consumer stops: the producers are done and its last
// look found the queue empty.
func (r *exactlyOnceRace) done(empty bool) bool {
	select {
	case <-r.produced:
		return empty
	default:
		return false
	}
}

// mcpConsumer takes instructions as agent through get_user_request on c.
func (r *exactlyOnceRace) mcpConsumer(t *testing.T, c *client.Client, agent string) {
	r.consumers.Go(func() {
		for {
			next, err := callNextWithin(c, agent)
			if err != nil {
				t.Error(err)
				return
			}
			if next.Instruction != nil {
				r.record(next.Instruction.Content)
			}
			if r.done(next.Instruction == nil) {
				return
			}
		}
	})
}

// cliConsumer takes instructions as agent with `lm queue next` in env.
func (r *exactlyOnceRace) cliConsumer(t *testing.T, env []string, agent string) {
	r.consumers.Go(func() {
		for {
			out, code := runLMEnv(t, env, "", "queue", "next", "--agent-id", agent, "-r", "--jq", ".instruction.content // empty")
			if code == 0 {
				r.record(strings.TrimSuffix(out, "\n"))
			}
			if r.done(code == 7) {
				return
			}
		}
	})
}

// producer adds count instructions named after p with `lm queue add` in
// env, one at a time or in --jsonl batches of up to maxBatch.
func (r *exactlyOnceRace) producer(t *testing.T, env []string, p, count, maxBatch int) {
	r.producers.Go(func() {
		for i := 0; i < count; {
			n := min(1+rand.IntN(maxBatch), count-i)
			if n == 1 {
				runLMEnv(t, env, "", "queue", "add", fmt.Sprintf("p%d-%d", p, i))
			} else {
				var lines strings.Builder
				for j := range n {
					fmt.Fprintf(&lines, "%q\n", fmt.Sprintf("p%d-%d", p, i+j))
				}
				runLMEnv(t, env, lines.String(), "queue", "add", "--jsonl")
			}
			i += n
		}
	})
}

// check waits for the producers and then the consumers, and checks that
// each of the want instructions was delivered once and that the queue,
// read in env, has none pending and want consumed.
func (r *exactlyOnceRace) check(t *testing.T, env []string, want int) {
	t.Helper()
	r.producers.Wait()
	close(r.produced)
	r.consumers.Wait()
	if len(r.delivered) != want {
		t.Errorf("%d distinct instructions delivered, want %d", len(r.delivered), want)
	}
	for content, n := range r.delivered {
		if n != 1 {
			t.Errorf("%q delivered %d times", content, n)
		}
	}
	out, _ := runLMEnv(t, env, "", "queue", "status", "-r", "--jq", `"\(.queue.pending_count) \(.queue.consumed_count)"`)
	if wantOut := fmt.Sprintf("0 %d\n", want); out != wantOut {
		t.Errorf("status counts %q, want %q", out, wantOut)
	}
}

// TestQueueExactlyOnceAcrossProcesses races 2 producer processes adding 500
// instructions against 3 `lm mcp` consumers and 2 `lm queue next` loops:
// every instruction must be delivered exactly once and none lost.
func TestQueueExactlyOnceAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process race: not in -short")
	}
	home := t.TempDir()
	runLM(t, home, "", "queue", "config", "default_wait_seconds=1")
	const producers, perProducer = 2, 250

	race := newExactlyOnceRace()
	for i := range 3 {
		agent := fmt.Sprintf("mcp-%d", i)
		race.mcpConsumer(t, startMCP(t, home, agent), agent)
	}
	for i := range 2 {
		race.cliConsumer(t, lmEnv(home), fmt.Sprintf("cli-%d", i))
	}
	for p := range producers {
		race.producer(t, lmEnv(home), p, perProducer, 8)
	}
	race.check(t, lmEnv(home), producers*perProducer)
}

// TestKilledWaiterClaimsNothing kills a waiting consumer and checks that an
// instruction added afterwards is still pending, for the next consumer.
func TestKilledWaiterClaimsNothing(t *testing.T) {
	home := t.TempDir()
	runLM(t, home, "", "queue", "config", "default_wait_seconds=60")
	cmd := exec.Command("lm", "queue", "next", "--agent-id", "victim")
	cmd.Env = lmEnv(home)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		out, _ := runLM(t, home, "", "queue", "status", "-r", "--jq", `.agents[] | select(.agent_id=="victim") | .waiting`)
		return strings.TrimSpace(out) == "true"
	})
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	runLM(t, home, "", "queue", "add", "for the living")
	out, _ := runLM(t, home, "", "queue", "list", "-r", "--jq", `.items[] | "\(.status) \(.content)"`)
	if out != "pending for the living\n" {
		t.Fatalf("after killing the waiter, list = %q", out)
	}
	runLM(t, home, "", "queue", "config", "default_wait_seconds=0")
	out, _ = runLM(t, home, "", "queue", "next", "--agent-id", "survivor", "-r", "--jq", ".instruction.content")
	if out != "for the living\n" {
		t.Fatalf("survivor got %q", out)
	}
}

// TestStoreSurvivesKills SIGKILLs producers and consumers at random moments
// and checks that the store stays sound and consistent: every instruction
// pending, or consumed with its agent and time.
func TestStoreSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("kill loop: not in -short")
	}
	home := t.TempDir()
	runLM(t, home, "", "queue", "config", "default_wait_seconds=1")
	var batch strings.Builder
	for i := range 200 {
		fmt.Fprintf(&batch, "%q\n", fmt.Sprintf("bulk %d", i))
	}
	for round := range 40 {
		batchAdd := exec.Command("lm", "queue", "add", "--jsonl")
		batchAdd.Stdin = strings.NewReader(batch.String())
		startThenKill(t, lmEnv(home), 30*time.Millisecond,
			batchAdd,
			exec.Command("lm", "queue", "add", fmt.Sprintf("single %d", round)),
			exec.Command("lm", "queue", "next", "--agent-id", fmt.Sprintf("k%d", round)))
	}
	out, code := runLM(t, home, "", "store", "check", "-r", "--jq", ".ok")
	if code != 0 || out != "true\n" {
		t.Fatalf("store check: %q (exit %d)", out, code)
	}
	list, _ := runLM(t, home, "", "queue", "list", "--status", "all")
	var items struct {
		Items []struct {
			Status     string  `json:"status"`
			ConsumedAt *string `json:"consumed_at"`
			Agent      *string `json:"consumed_by_agent_id"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(list), &items); err != nil {
		t.Fatal(err)
	}
	pending, consumed := 0, 0
	for _, it := range items.Items {
		switch {
		case it.Status == "pending" && it.ConsumedAt == nil:
			pending++
		case it.Status == "consumed" && it.ConsumedAt != nil && it.Agent != nil:
			consumed++
		default:
			t.Errorf("inconsistent instruction: %+v", it)
		}
	}
	counts, _ := runLM(t, home, "", "queue", "status", "-r", "--jq", `"\(.queue.pending_count) \(.queue.consumed_count)"`)
	if want := fmt.Sprintf("%d %d\n", pending, consumed); counts != want {
		t.Errorf("status counts %q, but the list has %q", counts, want)
	}
	if _, err := os.Stat(filepath.Join(home, "lm.db")); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 15s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startThenKill starts cmds in env and SIGKILLs them all at a random moment
// within maxDelay, wherever that finds them.
func startThenKill(t *testing.T, env []string, maxDelay time.Duration, cmds ...*exec.Cmd) {
	t.Helper()
	for _, cmd := range cmds {
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(rand.N(maxDelay))
	for _, cmd := range cmds {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
}
