package testscripts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/queue/pgstore/pgtest"
)

// teamGateway is an `lm gateway` process on a LM_HOME of its own (one
// machine of a team), serving the queue in the team's database.
type teamGateway struct {
	cmd  *exec.Cmd
	base string
	log  *syncBuffer // its stderr: its log
}

// syncBuffer is a buffer a child process writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startTeamGateway starts `lm gateway --no-token` on a free loopback port
// in env.
func startTeamGateway(t *testing.T, env []string) *teamGateway {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "addr")
	g := &teamGateway{log: &syncBuffer{}}
	g.cmd = exec.Command("lm", "gateway", "--no-token", "--addr", "127.0.0.1:0", "--addr-file", addrFile)
	g.cmd.Env, g.cmd.Stderr = env, g.log
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.cmd.Process.Kill(); g.cmd.Wait() })
	var addr []byte
	waitFor(t, func() bool {
		addr, _ = os.ReadFile(addrFile)
		return len(bytes.TrimSpace(addr)) > 0
	})
	g.base = "http://" + strings.TrimSpace(string(addr))
	return g
}

// lmResult runs lm in env and returns what it printed and its exit status,
// whatever that is.
func lmResult(t *testing.T, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("lm", args...)
	cmd.Env, cmd.Stdin = env, strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("lm %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// teamLoad drives one queue database from many machines at once: producers
// add through gateways' HTTP API and with `lm queue add --jsonl`,
// consumers take with get_user_request on gateways' /mcp and with
// `lm queue next`. It tolerates the faults a test injects — a gateway
// killed, the database restarting — and records what it needs to judge
// them: which adds were acknowledged, which were refused as unavailable
// (committed or not, the client cannot know), and what each consumer got.
type teamLoad struct {
	t *testing.T
	// secret must appear in no message a client sees.
	secret string

	mu        sync.Mutex
	added     map[string]bool   // acknowledged adds
	refused   map[string]bool   // adds refused as unavailable
	delivered map[string]string // content → the agent it reached
	triggers  []trigger
	// refusals counts operations refused as unavailable; broken counts
	// consumers' calls that ended without an answer they could trust
	// (refused, or their gateway gone): each may have taken one
	// instruction that never reached its agent.
	refusals, broken atomic.Int64

	produced  chan struct{}
	producers sync.WaitGroup
	consumers sync.WaitGroup
	// stop ends every consumer at once, waiting calls included.
	stop       context.Context
	stopCancel context.CancelFunc
}

// trigger is closed once deliveries reach at.
type trigger struct {
	at      int
	reached chan struct{}
}

func newTeamLoad(t *testing.T, secret string) *teamLoad {
	l := &teamLoad{t: t, secret: secret, added: map[string]bool{}, refused: map[string]bool{}, delivered: map[string]string{},
		produced: make(chan struct{})}
	l.stop, l.stopCancel = context.WithCancel(context.Background())
	t.Cleanup(l.stopCancel)
	return l
}

// reached is closed once n instructions have been delivered.
func (l *teamLoad) reached(n int) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	tr := trigger{n, make(chan struct{})}
	l.triggers = append(l.triggers, tr)
	return tr.reached
}

func (l *teamLoad) deliver(content, agent string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if other, twice := l.delivered[content]; twice {
		l.t.Errorf("%q delivered to %s and to %s", content, other, agent)
		return
	}
	l.delivered[content] = agent
	l.triggers = slices.DeleteFunc(l.triggers, func(tr trigger) bool {
		if len(l.delivered) >= tr.at {
			close(tr.reached)
			return true
		}
		return false
	})
}

func (l *teamLoad) deliveries() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.delivered)
}

// unavailable checks a refusal's message: it says the database is
// unavailable and shows no secret.
func (l *teamLoad) unavailable(what, msg string) {
	l.refusals.Add(1)
	if l.secret != "" && strings.Contains(msg, l.secret) {
		l.t.Errorf("%s: the refusal shows the password: %s", what, msg)
	}
	if !strings.Contains(msg, "unavailable") {
		l.t.Errorf("%s: the refusal does not say the database is unavailable: %s", what, msg)
	}
}

func (l *teamLoad) record(into map[string]bool, contents ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range contents {
		into[c] = true
	}
}

// done says whether a consumer stops: the producers are done and its last
// look found the queue empty.
func (l *teamLoad) done(empty bool) bool {
	select {
	case <-l.produced:
		return empty
	case <-l.stop.Done():
		return true
	default:
		return false
	}
}

// httpProducer adds count instructions named after name, one POST each,
// through the gateway at base.
func (l *teamLoad) httpProducer(base, name string, count int) {
	l.producers.Go(func() {
		for i := range count {
			content := fmt.Sprintf("%s-%d", name, i)
			body, _ := json.Marshal(map[string]string{"content": content})
			resp, err := http.Post(base+"/api/instructions", "application/json", bytes.NewReader(body))
			if err != nil {
				l.t.Errorf("%s: POST /api/instructions: %v", name, err)
				return
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusCreated:
				l.record(l.added, content)
			case http.StatusServiceUnavailable:
				l.unavailable(name+": POST /api/instructions", string(msg))
				l.record(l.refused, content)
			default:
				l.t.Errorf("%s: POST /api/instructions: %s %s", name, resp.Status, msg)
				return
			}
		}
	})
}

// cliProducer adds count instructions named after name with
// `lm queue add --jsonl` in env, in batches of up to maxBatch.
func (l *teamLoad) cliProducer(env []string, name string, count, maxBatch int) {
	l.producers.Go(func() {
		for i := 0; i < count; {
			batch := make([]string, min(1+rand.IntN(maxBatch), count-i))
			var lines strings.Builder
			for j := range batch {
				batch[j] = fmt.Sprintf("%s-%d", name, i+j)
				fmt.Fprintf(&lines, "%q\n", batch[j])
			}
			i += len(batch)
			_, stderr, code := lmResult(l.t, env, lines.String(), "queue", "add", "--jsonl")
			switch code {
			case 0:
				l.record(l.added, batch...)
			case 6:
				l.unavailable(name+": lm queue add", stderr)
				l.record(l.refused, batch...)
			default:
				l.t.Errorf("%s: lm queue add --jsonl: exit %d: %s", name, code, stderr)
				return
			}
		}
	})
}

// cliConsumer takes instructions as agent with `lm queue next` in env.
func (l *teamLoad) cliConsumer(env []string, agent string) {
	l.consumers.Go(func() {
		for {
			out, stderr, code := lmResult(l.t, env, "", "queue", "next", "--agent-id", agent, "-r", "--jq", ".instruction.content // empty")
			switch code {
			case 0:
				l.deliver(strings.TrimSuffix(out, "\n"), agent)
			case 6:
				l.unavailable(agent+": lm queue next", stderr)
				l.broken.Add(1)
			case 7:
			default:
				l.t.Errorf("%s: lm queue next: exit %d: %s", agent, code, stderr)
				return
			}
			if l.done(code == 7) {
				return
			}
		}
	})
}

// mcpAgent takes instructions as agent with get_user_request over the
// /mcp of the gateways bases gives, starting with the one at first. When
// its gateway goes away, it connects to the next one that answers, as an
// agent configured with several would.
func (l *teamLoad) mcpAgent(bases func() []string, first int, agent string) {
	l.consumers.Go(func() {
		var c *client.Client
		defer func() {
			if c != nil {
				c.Close()
			}
		}()
		for turn := first; ; {
			if c == nil {
				list := bases()
				var err error
				if c, err = connectAgent(l.stop, list[turn%len(list)]+"/mcp", agent); err != nil {
					if l.stop.Err() != nil {
						return
					}
					turn++
					time.Sleep(50 * time.Millisecond)
					continue
				}
			}
			next, err := callNextCtx(l.stop, c, agent)
			var toolErr *toolError
			switch {
			case l.stop.Err() != nil:
				return
			case errors.As(err, &toolErr):
				l.unavailable(agent+": get_user_request", toolErr.msg)
				l.broken.Add(1)
				time.Sleep(50 * time.Millisecond)
				continue
			case err != nil:
				// The gateway is gone: whatever it took for this call
				// stays consumed for this agent.
				l.broken.Add(1)
				c.Close()
				c = nil
				turn++
				continue
			case next.Instruction != nil:
				l.deliver(next.Instruction.Content, agent)
			}
			if l.done(next.Instruction == nil) {
				return
			}
		}
	})
}

// toolError is a get_user_request that answered with an error result.
type toolError struct{ msg string }

func (e *toolError) Error() string { return e.msg }

// callNextCtx is callNext telling a tool's error result from a failed
// transport.
func callNextCtx(ctx context.Context, c *client.Client, agent string) (nextResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = "get_user_request"
	req.Params.Arguments = map[string]any{"agent_id": agent}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return nextResult{}, err
	}
	if res.IsError {
		var text []string
		for _, c := range res.Content {
			if tc, ok := c.(mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		return nextResult{}, &toolError{strings.Join(text, " ")}
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var r nextResult
	return r, json.Unmarshal(raw, &r)
}

// connectAgent opens an MCP session named agent on a gateway's /mcp.
func connectAgent(ctx context.Context, url, agent string) (*client.Client, error) {
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: agent, Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// finish waits for the producers, then for the consumers to drain the
// queue.
func (l *teamLoad) finish() {
	l.producers.Wait()
	close(l.produced)
	l.consumers.Wait()
}

// teamItem is an instruction as `lm queue list --status all` shows it.
type teamItem struct {
	Content     string  `json:"content"`
	Status      string  `json:"status"`
	Agent       *string `json:"consumed_by_agent_id"`
	ConsumedAt  *string `json:"consumed_at"`
	Unconfirmed bool    `json:"delivery_unconfirmed"`
}

// check reads the queue in env once every process that could have taken
// an instruction has ended, and checks the promise: every acknowledged add
// is there, nothing is there that was never added, and each instruction is
// consumed once, with its agent and time, by the agent it reached. One no
// consumer reported was taken by a call that broke off (at most one each);
// it is consumed with its agent too, never pending and consumed at once
// nor lost.
func (l *teamLoad) check(env []string) {
	l.t.Helper()
	out, _ := runLMEnv(l.t, env, "", "queue", "list", "--status", "all")
	var list struct {
		Items []teamItem `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		l.t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	listed := map[string]bool{}
	var unreported []string
	for _, it := range list.Items {
		agent, reached := l.delivered[it.Content]
		switch {
		case listed[it.Content]:
			l.t.Errorf("%q is listed twice", it.Content)
		case !l.added[it.Content] && !l.refused[it.Content]:
			l.t.Errorf("%q is in the queue and was never added", it.Content)
		case it.Status != "consumed" || it.Agent == nil || it.ConsumedAt == nil:
			l.t.Errorf("%q is %s (agent %v) after the consumers drained the queue", it.Content, it.Status, it.Agent)
		case reached && *it.Agent != agent:
			l.t.Errorf("%q reached %s and is recorded for %s", it.Content, agent, *it.Agent)
		case !reached:
			unreported = append(unreported, fmt.Sprintf("%s (by %s, delivery_unconfirmed %t)", it.Content, *it.Agent, it.Unconfirmed))
		}
		listed[it.Content] = true
	}
	if int64(len(unreported)) > l.broken.Load() {
		l.t.Errorf("%d instructions consumed and never reported, by %d calls that broke off: %v", len(unreported), l.broken.Load(), unreported)
	} else if len(unreported) > 0 {
		l.t.Logf("taken by calls that broke off: %v", unreported)
	}
	for c := range l.added {
		if !listed[c] {
			l.t.Errorf("%q was acknowledged and is gone", c)
		}
	}
	for c := range l.delivered {
		if !listed[c] {
			l.t.Errorf("%q reached an agent and is not in the queue", c)
		}
	}
}

// TestPostgresTeamExactlyOnce: 3 gateways and 2 CLIs on five LM_HOMEs, as
// on five machines, share one database. 50 agents, MCP sessions spread over
// the gateways' /mcp, loop get_user_request while producers add 3,000
// instructions through the gateways' HTTP API and with
// `lm queue add --jsonl`, and the 2 CLIs take with `lm queue next`: each
// instruction reaches exactly one consumer. (10,000 take about a minute on
// two cores: lmbench postgres runs that many.) lm store check and backup
// meanwhile see a sound, consistent queue.
func TestPostgresTeamExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("many processes and sessions: not in -short")
	}
	cluster, url := teamCluster(t)
	admin := teamEnv(t.TempDir(), url)
	runLMEnv(t, admin, "", "queue", "config", "default_wait_seconds=1")
	var bases []string
	for range 3 {
		bases = append(bases, startTeamGateway(t, teamEnv(t.TempDir(), url)).base)
	}
	load := newTeamLoad(t, "")
	for i := range 50 {
		load.mcpAgent(func() []string { return bases }, i, fmt.Sprintf("agent-%d", i))
	}
	for i := range 2 {
		load.cliConsumer(teamEnv(t.TempDir(), url), fmt.Sprintf("cli-%d", i))
	}
	const httpPerGateway, producersPerGateway, cliAdds = 600, 2, 600
	for g, base := range bases {
		for p := range producersPerGateway {
			load.httpProducer(base, fmt.Sprintf("http-%d-%d", g, p), httpPerGateway/producersPerGateway)
		}
	}
	for p := range 2 {
		load.cliProducer(teamEnv(t.TempDir(), url), fmt.Sprintf("cli-add-%d", p), cliAdds, 100)
	}
	began := time.Now()
	// Checked and backed up while every process writes: each reads one
	// snapshot, so the writers show as no damage and the export is
	// consistent.
	within(t, load.reached(1000), "1,000 deliveries")
	if out, code := runLMEnv(t, admin, "", "store", "check", "-r", "--jq", `"\(.ok) \(.queue.problems)"`); code != 0 || out != "true []\n" {
		t.Errorf("lm store check under load: exit %d: %s", code, out)
	}
	backup := filepath.Join(t.TempDir(), "lm.db")
	runLMEnv(t, admin, "", "store", "backup", backup)
	load.finish()
	t.Logf("%d instructions delivered in %s", load.deliveries(), time.Since(began).Round(time.Millisecond))
	second := cluster.URL(t)
	restored := teamEnv(t.TempDir(), second)
	runLMEnv(t, restored, "", "store", "migrate")
	if msg, err := restoreExport(t, backup+".queue.sql", second); err != nil {
		t.Fatalf("restoring the export taken under load: %v %s", err, msg)
	}
	if out, code := runLMEnv(t, restored, "", "store", "check", "-r", "--jq", `"\(.ok) \(.queue.problems)"`); code != 0 || out != "true []\n" {
		t.Errorf("lm store check of the export taken under load, restored: exit %d: %s", code, out)
	}
	const total = 3*httpPerGateway + 2*cliAdds
	if n := len(load.added); n != total || load.deliveries() != total {
		t.Errorf("%d adds acknowledged and %d delivered, want %d each", n, load.deliveries(), total)
	}
	load.check(admin)
	out, _ := runLMEnv(t, admin, "", "queue", "status", "-r", "--jq", `"\(.queue.pending_count) \(.queue.consumed_count)"`)
	if want := fmt.Sprintf("0 %d\n", total); out != want {
		t.Errorf("the database counts %q pending and consumed, want %q", out, want)
	}
}

// teamHomeWithSecret is a LM_HOME whose config.toml names the database at
// url and takes its password from lm's secrets, so the URL every process
// uses carries password: what a team member who keeps it out of the
// environment does.
func teamHomeWithSecret(t *testing.T, url, password string) []string {
	t.Helper()
	home := t.TempDir()
	config := fmt.Sprintf("[store]\nurl = %q\npassword = \"${secret:lm_db}\"\n", url)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	runLM(t, home, password, "servers", "secret", "set", "lm_db", "--file")
	return lmEnv(home)
}

// noProcessShows fails the test when any process's command line or
// environment it may read holds secret.
func noProcessShows(t *testing.T, secret string) {
	t.Helper()
	for _, file := range []string{"cmdline", "environ"} {
		paths, _ := filepath.Glob("/proc/[0-9]*/" + file)
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds the database password", p)
			}
		}
	}
}

// within waits for ch, failing the test after a minute.
func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("%s: not within a minute", what)
	}
}

// TestPostgresTeamSurvivesFaults: 3 gateways, 2 CLIs and 30 agents on one
// database, whose password every process reads from lm's secrets. Under
// load one gateway is SIGKILLed (its agents move to the others) and the
// database goes down and comes back. Meanwhile operations are refused as
// unavailable (exit 6, HTTP 503) without the password; afterwards nothing
// was taken twice, every acknowledged add is there, and each instruction is
// consumed with its agent: the one it reached, or one whose call broke off
// (its gateway killed, the database gone mid-commit), at most one each. Then calls waiting through a second outage
// carry on and take what is added once the database is back.
func TestPostgresTeamSurvivesFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("many processes and a database restart: not in -short")
	}
	const secret = "team-db-pw-7Qx2"
	cluster, url := teamCluster(t)
	// The database crashes: what it acknowledged must be on disk.
	pgtest.Durable(t, url)
	admin := teamHomeWithSecret(t, url, secret)
	runLMEnv(t, admin, "", "queue", "config", "default_wait_seconds=1")
	var gateways []*teamGateway
	for range 3 {
		gateways = append(gateways, startTeamGateway(t, teamHomeWithSecret(t, url, secret)))
	}
	var live atomic.Int32
	live.Store(3)
	bases := func() []string {
		var out []string
		for _, g := range gateways[:live.Load()] {
			out = append(out, g.base)
		}
		return out
	}

	load := newTeamLoad(t, secret)
	for i := range 30 {
		load.mcpAgent(bases, i, fmt.Sprintf("agent-%d", i))
	}
	for i := range 2 {
		load.cliConsumer(teamHomeWithSecret(t, url, secret), fmt.Sprintf("cli-%d", i))
	}
	// The gateway killed serves agents only: a producer's client would
	// move on, as an agent does, and that is the agents' part here.
	for g, base := range bases()[:2] {
		for p := range 2 {
			load.httpProducer(base, fmt.Sprintf("http-%d-%d", g, p), 400)
		}
	}
	for p := range 2 {
		load.cliProducer(teamHomeWithSecret(t, url, secret), fmt.Sprintf("cli-add-%d", p), 200, 20)
	}
	killed, down := load.reached(300), load.reached(1000)

	within(t, killed, "300 deliveries")
	live.Store(2)
	if err := gateways[2].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	gateways[2].cmd.Wait()

	within(t, down, "1,000 deliveries")
	cluster.Down(t)
	// While it is down every face refuses: the page's API, the CLI, an
	// agent's tool.
	resp, err := http.Post(gateways[0].base+"/api/instructions", "application/json", strings.NewReader(`{"content": "during the outage"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("an add on a gateway while the database is down: %s %s", resp.Status, body)
	}
	load.unavailable("an add on a gateway while the database is down", string(body))
	if _, stderr, code := lmResult(t, admin, "", "queue", "add", "during the outage"); code != 6 {
		t.Errorf("lm queue add while the database is down: exit %d: %s", code, stderr)
	} else {
		load.unavailable("lm queue add while the database is down", stderr)
	}
	noProcessShows(t, secret)
	cluster.Up(t)
	load.finish()
	if load.refusals.Load() < 2 {
		t.Errorf("%d operations refused during the outage", load.refusals.Load())
	}

	// Calls waiting while the database goes away carry on, and take what
	// is added once it is back.
	runLMEnv(t, admin, "", "queue", "config", "default_wait_seconds=600")
	const waiters = 6
	results := make(chan error, waiters)
	for i := range waiters {
		agent := fmt.Sprintf("patient-%d", i)
		c, err := connectAgent(context.Background(), bases()[i%2]+"/mcp", agent)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() {
			next, err := callNextCtx(context.Background(), c, agent)
			if err == nil && next.Instruction == nil {
				err = fmt.Errorf("%s's wait ended empty", agent)
			}
			if err == nil {
				load.deliver(next.Instruction.Content, agent)
			}
			results <- err
		}()
	}
	waitFor(t, func() bool {
		out, _ := runLMEnv(t, admin, "", "queue", "status", "-r", "--jq", `[.agents[] | select(.waiting and (.agent_id | startswith("patient")))] | length`)
		return strings.TrimSpace(out) == fmt.Sprint(waiters)
	})
	cluster.Down(t)
	for _, base := range bases() {
		resp, err := http.Get(base + "/api/status")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s/api/status while the database is down: %s", base, resp.Status)
		}
	}
	cluster.Up(t)
	var lines strings.Builder
	var after []string
	for i := range waiters {
		after = append(after, fmt.Sprintf("after the outage %d", i))
		fmt.Fprintf(&lines, "%q\n", after[i])
	}
	// The first adds may still meet the pool's dead connections.
	for range 100 {
		_, stderr, code := lmResult(t, admin, lines.String(), "queue", "add", "--jsonl")
		if code == 0 {
			load.record(load.added, after...)
			break
		}
		if code != 6 {
			t.Fatalf("lm queue add after the outage: exit %d: %s", code, stderr)
		}
		load.unavailable("lm queue add just after the outage", stderr)
		time.Sleep(100 * time.Millisecond)
	}
	for range waiters {
		select {
		case err := <-results:
			if err != nil {
				t.Errorf("a call waiting through the outage: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("the calls waiting through the outage did not take what was added after it")
		}
	}

	for _, g := range gateways[:2] {
		g.cmd.Process.Kill()
		g.cmd.Wait()
		if strings.Contains(g.log.String(), secret) {
			t.Errorf("a gateway's log shows the database password:\n%s", g.log.String())
		}
	}
	load.check(admin)
}
