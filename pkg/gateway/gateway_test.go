package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"lmtool.dev/lm/cli"
	"lmtool.dev/lm/pkg/gateway"
	"lmtool.dev/lm/pkg/gateway/token"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/queue"
	"lmtool.dev/lm/pkg/queue/pgstore"
	"lmtool.dev/lm/pkg/queue/pgstore/pgtest"
	"lmtool.dev/lm/pkg/registry"
	"lmtool.dev/lm/pkg/store"
	"lmtool.dev/lm/pkg/testkit"
)

// TestMain lets tests run the test binary as the lm command, so changes
// can come from other processes exactly as from a shell or an agent.
func TestMain(m *testing.M) {
	if os.Getenv("LM_TEST_AS_LM") == "1" {
		os.Exit(cli.Main(registry.Catalog()))
	}
	os.Exit(m.Run())
}

// gw is a gateway serving a fresh store on loopback.
type gw struct {
	t     *testing.T
	url   string
	store string
	opts  gateway.Options
	stop  func() // stops serving; later calls do nothing
}

// personToken is the person's token of the gateways tests start, unless a
// test gives its own or none.
const personToken = "lmp_test-person-token"

// auth is the header that carries the person's token ("" with no token).
func (g *gw) auth() string {
	if g.opts.Token == "" {
		return ""
	}
	return "Bearer " + g.opts.Token
}

// authHeaders are the headers an MCP client sends to carry the person's
// token.
func (g *gw) authHeaders() map[string]string {
	return map[string]string{"Authorization": g.auth()}
}

// agentHeaders are the headers of an agent with a token of its own, made
// for name.
func (g *gw) agentHeaders(name string) map[string]string {
	g.t.Helper()
	tok, err := token.AddAgent(filepath.Dir(g.store), name, time.Now())
	if err != nil {
		g.t.Fatal(err)
	}
	return map[string]string{"Authorization": "Bearer " + tok}
}

// page is the page's URL as lm gateway prints it, with the person's token.
func (g *gw) page() string {
	return gateway.PageURL(strings.TrimPrefix(g.url, "http://"), g.opts.Token)
}

func start(t *testing.T, opts gateway.Options) *gw {
	t.Helper()
	return startIn(t, t.TempDir(), opts)
}

// startIn serves a gateway whose LM_HOME is home, so a test can put a
// servers.json there first.
func startIn(t *testing.T, home string, opts gateway.Options) *gw {
	t.Helper()
	return startAt(t, home, "127.0.0.1:0", opts)
}

// startAt serves a gateway whose LM_HOME is home on addr.
func startAt(t *testing.T, home, addr string, opts gateway.Options) *gw {
	t.Helper()
	path := filepath.Join(home, "lm.db")
	now := opts.Env.Now // a test's clock, else the real one
	if now == nil {
		now = time.Now
	}
	opts.Env = op.Env{Store: store.New(path, 0), Queue: opts.Env.Queue, Home: filepath.Dir(path), Stderr: io.Discard, Now: now, Environ: os.Environ(), Roots: opts.Env.Roots, Grant: opts.Env.Grant}
	opts.Ops = registry.All()
	opts.Version = "test"
	if opts.Token == "" && !opts.NoToken {
		opts.Token = personToken
	}
	if opts.KeepAlive == 0 {
		opts.KeepAlive = 200 * time.Millisecond
	}
	g := &gw{t: t, store: path, opts: opts}
	g.serve(addr)
	t.Cleanup(func() { g.stop() })
	return g
}

// serve starts a new gateway process-equivalent (a new server on the same
// store and home) listening on addr.
func (g *gw) serve(addr string) {
	g.t.Helper()
	srv, err := gateway.New(g.opts)
	if err != nil {
		g.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		g.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	g.url = "http://" + ln.Addr().String()
	g.stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			g.t.Errorf("serve: %v", err)
		}
	})
}

// restart stops the gateway and serves the same store on the same address
// again, as `lm gateway restart` does.
func (g *gw) restart() {
	g.t.Helper()
	g.stop()
	// A kept-alive connection to the stopped process would fail the next
	// POST with EOF (Go retries only idempotent requests): a client meets
	// that after any server restart, and this test is about the gateway.
	http.DefaultClient.CloseIdleConnections()
	g.serve(strings.TrimPrefix(g.url, "http://"))
}

// do sends a request and returns the status and the decoded JSON body.
func (g *gw) do(method, path, body string, header ...string) (int, map[string]any) {
	g.t.Helper()
	req, err := http.NewRequest(method, g.url+path, strings.NewReader(body))
	if err != nil {
		g.t.Fatal(err)
	}
	// The person's token and a JSON body unless the test says otherwise.
	req.Header.Set("Authorization", g.auth())
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	var out map[string]any
	if len(data) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(data, &out); err != nil {
			g.t.Fatalf("%s %s: body is not JSON: %s", method, path, data)
		}
	}
	return res.StatusCode, out
}

// lm runs the lm command in another process against the gateway's store.
// Exit status 7 (a wait that ended empty) is a result, not a failure.
func (g *gw) lm(args ...string) string {
	g.t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"--store", g.store}, args...)...)
	cmd.Env = append(os.Environ(), "LM_TEST_AS_LM=1", "LM_HOME="+filepath.Dir(g.store))
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 7) {
		g.t.Fatalf("lm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// mcpNext is an agent in another process: it spawns `lm mcp` over stdio
// on the gateway's store, calls get_user_request once as agentID, and
// returns the JSON-RPC answer. Stdin stays open until the answer is in:
// an agent that hangs up cancels its call.
func (g *gw) mcpNext(agentID string) string {
	g.t.Helper()
	cmd := exec.Command(os.Args[0], "--store", g.store, "mcp")
	cmd.Env = append(os.Environ(), "LM_TEST_AS_LM=1", "LM_HOME="+filepath.Dir(g.store))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stdio-agent","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_user_request","arguments":{"agent_id":"`+agentID+`"}}}
`)
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		if strings.Contains(lines.Text(), `"id":2`) {
			return lines.Text()
		}
	}
	g.t.Fatalf("lm mcp ended without answering the call: %v", lines.Err())
	return ""
}

func TestAPIRoutes(t *testing.T) {
	g := start(t, gateway.Options{})
	item := func(body map[string]any) map[string]any { return body["item"].(map[string]any) }

	code, body := g.do("POST", "/api/instructions", `{"content": "first\nwith a second line"}`)
	if code != 201 || item(body)["content"] != "first\nwith a second line" || item(body)["position"] != 1.0 {
		t.Fatalf("POST /api/instructions = %d %v", code, body)
	}
	first := item(body)["id"].(string)
	_, body = g.do("POST", "/api/instructions", `{"content": "second"}`)
	second := item(body)["id"].(string)

	cases := []struct {
		method, path, body string
		status             int
		category           string
	}{
		{"GET", "/healthz", "", 200, ""},
		{"GET", "/api/status", "", 200, ""},
		{"GET", "/api/instructions?status=pending", "", 200, ""},
		{"GET", "/api/instructions?status=bogus", "", 422, "invalid_input"},
		{"GET", "/api/instructions?limit=x", "", 422, "invalid_input"},
		{"GET", "/api/instructions/" + first, "", 200, ""},
		{"GET", "/api/instructions/NOPE", "", 404, "not_found"},
		{"POST", "/api/instructions", `{"content": "   "}`, 422, "invalid_input"},
		{"POST", "/api/instructions", `{"content": 5}`, 422, "invalid_input"},
		{"POST", "/api/instructions", `{"colour": "red"}`, 422, "invalid_input"},
		{"POST", "/api/instructions", `not json`, 400, "bad_json"},
		{"POST", "/api/instructions", `["content"]`, 400, "bad_json"},
		{"POST", "/api/instructions", `{"content": "` + strings.Repeat("x", 3<<20) + `"}`, 400, "body_too_large"},
		{"PATCH", "/api/instructions/" + first, `{"content": "first, reworded"}`, 200, ""},
		{"PATCH", "/api/instructions/NOPE", `{"content": "x"}`, 404, "not_found"},
		{"PATCH", "/api/instructions/" + first, `{"content": ""}`, 422, "invalid_input"},
		{"POST", "/api/instructions/" + second + "/move", `{"to": 1}`, 200, ""},
		{"POST", "/api/instructions/" + second + "/move", `{"to": 9}`, 422, "invalid_input"},
		{"GET", "/api/config", "", 200, ""},
		{"PATCH", "/api/config", `{"default_wait_seconds": 0, "agent_stale_after_seconds": 45}`, 200, ""},
		{"PATCH", "/api/config", `{"default_wait_seconds": -1}`, 422, "invalid_input"},
		{"PUT", "/api/config", `{}`, 405, "method_not_allowed"},
		{"GET", "/api/nothing", "", 404, "not_found"},
		{"GET", "/api/events?since=abc", "", 400, "invalid_input"},
		{"GET", "/openapi.json", "", 200, ""},
	}
	for _, c := range cases {
		code, body := g.do(c.method, c.path, c.body)
		if code != c.status {
			t.Errorf("%s %s = %d, want %d (%v)", c.method, c.path, code, c.status, body)
			continue
		}
		if c.category != "" && (body["error_category"] != c.category || body["success"] != false || body["error"] == "") {
			t.Errorf("%s %s: error body %v, want category %s", c.method, c.path, body, c.category)
		}
	}

	_, body = g.do("GET", "/api/instructions?status=pending", "")
	items := body["items"].([]any)
	if len(items) != 2 || items[0].(map[string]any)["id"] != second || items[1].(map[string]any)["content"] != "first, reworded" {
		t.Fatalf("after edit and move: %v", items)
	}
	if _, cfg := g.do("GET", "/api/config", ""); cfg["agent_stale_after_seconds"] != 45.0 || cfg["default_wait_seconds"] != 0.0 {
		t.Fatalf("config after PATCH: %v", cfg)
	}

	// Consumed instructions are history: no edit, no delete, no move; each
	// refusal is lm's error envelope naming the instruction.
	g.lm("queue", "next", "--agent-id", "tester")
	// Without ?status the list is all of them: the pending rack, then the
	// consumed history.
	_, all := g.do("GET", "/api/instructions", "")
	if items := all["items"].([]any); len(items) != 2 || items[0].(map[string]any)["id"] != first || items[1].(map[string]any)["status"] != "consumed" {
		t.Errorf("GET /api/instructions: %v, want the pending, then the consumed instruction", all)
	}
	refused := func(method, path, body, id string, status int, category string) {
		t.Helper()
		code, env := g.do(method, path, body)
		msg, _ := env["error"].(string)
		if code != status || env["error_category"] != category || env["success"] != false || !strings.Contains(msg, id) {
			t.Errorf("%s %s = %d %v, want %d %s naming %s", method, path, code, env, status, category, id)
		}
	}
	refused("PATCH", "/api/instructions/"+second, `{"content": "too late"}`, second, 409, "conflict")
	refused("DELETE", "/api/instructions/"+second, "", second, 409, "conflict")
	refused("POST", "/api/instructions/"+second+"/move", `{"to": 1}`, second, 409, "conflict")
	refused("POST", "/api/instructions/NOPE/move", `{"to": 1}`, "NOPE", 404, "not_found")
	if code, body := g.do("DELETE", "/api/instructions/"+first, ""); code != 204 || body != nil {
		t.Errorf("DELETE pending = %d %v, want 204 and no body", code, body)
	}
	refused("DELETE", "/api/instructions/"+first, "", first, 404, "not_found")

	// A consumed instruction can be put back at the head; a pending one is
	// refused; then it is consumed again as before.
	if code, body := g.do("POST", "/api/instructions/"+second+"/requeue", ""); code != 200 || item(body)["status"] != "pending" || item(body)["position"] != 1.0 {
		t.Fatalf("requeue consumed = %d %v", code, body)
	}
	refused("POST", "/api/instructions/"+second+"/requeue", "", second, 409, "conflict")
	g.lm("queue", "next", "--agent-id", "tester")
	_, st := g.do("GET", "/api/status", "")
	if q := st["queue"].(map[string]any); q["pending_count"] != 0.0 || q["consumed_count"] != 1.0 || st["agent"].(map[string]any)["agent_id"] != "tester" {
		t.Errorf("status: %v", st)
	}
}

func TestTokenAndOrigin(t *testing.T) {
	g := start(t, gateway.Options{Token: "s3cret"})
	for _, c := range []struct {
		name   string
		path   string
		header []string
		status int
	}{
		{"no token", "/api/status", nil, 401},
		{"wrong token", "/api/status", []string{"Authorization", "Bearer s3cre"}, 401},
		{"not bearer", "/api/status", []string{"Authorization", "s3cret"}, 401},
		{"token", "/api/status", []string{"Authorization", "Bearer s3cret"}, 200},
		{"mcp needs the token", "/mcp", nil, 401},
		{"legacy mcp needs the token", "/mcp/sse", nil, 401},
		{"mcp with a wrong token", "/mcp", []string{"Authorization", "Bearer s3cret-and-more"}, 401},
		{"events need the token", "/api/events", nil, 401},
		{"health is open", "/healthz", nil, 200},
		{"the page is open", "/", nil, 200},
		{"same origin", "/api/status", []string{"Authorization", "Bearer s3cret", "Origin", "URL"}, 200},
		{"foreign origin", "/api/status", []string{"Authorization", "Bearer s3cret", "Origin", "http://evil.example"}, 403},
		{"null origin", "/api/status", []string{"Authorization", "Bearer s3cret", "Origin", "null"}, 403},
		{"rebound host", "/api/status", []string{"Authorization", "Bearer s3cret", "Host", "evil.example:7437"}, 403},
		{"rebound host on the page", "/", []string{"Host", "evil.example"}, 403},
		{"localhost host", "/api/status", []string{"Authorization", "Bearer s3cret", "Host", "localhost:7437", "Origin", "http://localhost:7437"}, 200},
	} {
		// No token unless the case gives one.
		header := append([]string{"Authorization", ""}, c.header...)
		for i := range header {
			header[i] = strings.ReplaceAll(header[i], "URL", g.url)
		}
		code, body := g.do("GET", c.path, "", header...)
		if code != c.status {
			t.Errorf("%s: GET %s = %d, want %d (%v)", c.name, c.path, code, c.status, body)
		}
		if code == 401 && body["error_category"] != "unauthorized" {
			t.Errorf("%s: 401 body %v", c.name, body)
		}
	}
}

// sse reads an event stream.
type sse struct {
	res *http.Response
	r   *bufio.Reader
}

type message struct {
	id, event string
	data      map[string]any
}

func (g *gw) events(lastID string, header ...string) *sse {
	g.t.Helper()
	req, _ := http.NewRequest("GET", g.url+"/api/events", nil)
	req.Header.Set("Accept", "text/event-stream") // as browsers send it
	req.Header.Set("Authorization", g.auth())
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		g.t.Fatalf("GET /api/events = %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	g.t.Cleanup(func() { res.Body.Close() })
	return &sse{res: res, r: bufio.NewReader(res.Body)}
}

// next returns the next message, skipping comments; it fails the test if
// none comes within the deadline.
func (s *sse) next(t *testing.T) message {
	t.Helper()
	type result struct {
		m   message
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var m message
		for {
			line, err := s.r.ReadString('\n')
			if err != nil {
				ch <- result{err: err}
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "" && m.event != "":
				ch <- result{m: m}
				return
			case strings.HasPrefix(line, "id: "):
				m.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				m.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				json.Unmarshal([]byte(line[6:]), &m.data)
			}
		}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("event stream: %v", r.err)
		}
		return r.m
	case <-time.After(20 * time.Second):
		t.Fatal("no event within 20 s")
	}
	return message{}
}

// expect reads messages until one of the given type arrives.
func (s *sse) expect(t *testing.T, event string) message {
	t.Helper()
	for range 50 {
		if m := s.next(t); m.event == event {
			return m
		}
	}
	t.Fatalf("no %s event", event)
	return message{}
}

func TestEventsLiveAcrossProcessesAndResume(t *testing.T) {
	g := start(t, gateway.Options{})
	stream := g.events("")

	g.lm("queue", "add", "from a shell")
	created := stream.expect(t, "instruction.created")
	data := created.data["data"].(map[string]any)
	if data["content"] != "from a shell" || data["status"] != "pending" || created.id == "" || created.data["type"] != "instruction.created" {
		t.Fatalf("created event: %+v", created)
	}

	g.lm("queue", "next", "--agent-id", "agent-7")
	consumed := stream.expect(t, "instruction.consumed")
	if d := consumed.data["data"].(map[string]any); d["consumed_by_agent_id"] != "agent-7" || d["id"] != data["id"] {
		t.Fatalf("consumed event: %+v", consumed)
	}
	status := stream.expect(t, "status.changed")
	if d := status.data["data"].(map[string]any); d["agent_id"] != "agent-7" || d["connected"] != true {
		t.Fatalf("status event: %+v", status)
	}

	// An agent's own lm mcp process consumes one: the page hears of it.
	_, body := g.do("POST", "/api/instructions", `{"content": "for the stdio agent"}`)
	if answer := g.mcpNext("stdio-agent"); !strings.Contains(answer, "for the stdio agent") {
		t.Fatalf("lm mcp answered %s", answer)
	}
	stream.expect(t, "instruction.created")
	if d := stream.expect(t, "instruction.consumed").data["data"].(map[string]any); d["consumed_by_agent_id"] != "stdio-agent" || d["id"] != body["item"].(map[string]any)["id"] {
		t.Fatalf("consumed by lm mcp: %+v", d)
	}

	g.do("PATCH", "/api/config", `{"default_empty_response": "keep going"}`)
	cfg := stream.expect(t, "config.updated")
	if cfg.data["data"].(map[string]any)["default_empty_response"] != "keep going" {
		t.Fatalf("config event: %+v", cfg)
	}

	// Resuming after the first event replays everything after it, in order.
	resumed := g.events(created.id)
	if m := resumed.next(t); m.event != "instruction.consumed" || m.id <= created.id {
		t.Fatalf("resumed stream starts with %+v", m)
	}
}

// While no stream is open the gateway leaves other processes' commits
// unread (it reads them for its log at leisure), yet a stream that opens
// then starts with the next change, never with that backlog, and the log
// still tells each change once.
func TestEventsUnwatchedGatewayReadsLater(t *testing.T) {
	defer gateway.SetQuietFollow(time.Hour)()
	log := &testkit.Buffer{}
	g := start(t, gateway.Options{Log: slog.New(slog.NewTextHandler(log, nil))})
	for _, c := range []string{"backlog one", "backlog two", "backlog three"} {
		g.lm("queue", "add", c)
	}
	if n := strings.Count(log.String(), `msg="instruction created"`); n != 0 {
		t.Fatalf("an unwatched gateway read each outside commit at once (%d logged):\n%s", n, log.String())
	}
	stream := g.events("")
	g.lm("queue", "add", "after joining")
	first := stream.expect(t, "instruction.created")
	if c := first.data["data"].(map[string]any)["content"]; c != "after joining" {
		t.Fatalf("the new stream's first event is %q, from before it opened", c)
	}
	for i := 0; strings.Count(log.String(), `msg="instruction created"`) < 4; i++ {
		if i == 200 {
			t.Fatalf("the log lacks changes:\n%s", log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := strings.Count(log.String(), `msg="instruction created"`); n != 4 {
		t.Fatalf("4 instructions were added, the log tells %d:\n%s", n, log.String())
	}
}

// A client cannot be caught up from an event id this store never issued,
// nor from another store's: it is told to reload, then gets what follows.
func TestEventsResyncAnotherStoresClient(t *testing.T) {
	g := start(t, gateway.Options{})
	g.lm("queue", "add", "one")
	_, status := g.do("GET", "/api/status", "")
	storeID, _ := status["store_id"].(string)
	if storeID == "" {
		t.Fatalf("status has no store_id: %v", status)
	}
	for _, c := range []struct {
		name, lastID, store, reason string
	}{
		{"an id past the newest", "999", storeID, "unknown_event_id"},
		{"an id past the newest, no store named", "999", "", "unknown_event_id"},
		{"another store's id", "1", "feed.beef", "store_changed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var header []string
			if c.store != "" {
				header = []string{"Last-Event-Store", c.store}
			}
			_, status := g.do("GET", "/api/status", "")
			latest := status["last_event_id"].(float64)
			stream := g.events(c.lastID, header...)
			m := stream.next(t)
			if m.event != "resync" || m.data["reason"] != c.reason || m.data["latest_event_id"] != latest {
				t.Fatalf("first message %+v, want a resync for %s at %v", m, c.reason, latest)
			}
			g.lm("queue", "add", "after "+c.name)
			if d := stream.expect(t, "instruction.created").data["data"].(map[string]any); d["content"] != "after "+c.name {
				t.Fatalf("after the resync: %v", d)
			}
		})
	}
	// The same store's client resumes as before.
	if m := g.events("1", "Last-Event-Store", storeID).next(t); m.event == "resync" {
		t.Fatalf("a client of this store was told to resync: %+v", m)
	}
}

// A client whose last event the store has dropped may have missed what
// followed it, and is told to reload; one whose last event is still stored
// resumes without, however far apart the ids the store gave.
func TestEventsResyncOnceItsEventsExpired(t *testing.T) {
	ctx := context.Background()
	for _, backend := range []string{"bbolt", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			var opts gateway.Options
			if backend == "postgres" {
				opts.Env.Queue = pgtest.Own(t).URL(t)
				if _, err := pgstore.Migrate(ctx, opts.Env.Queue); err != nil {
					t.Fatal(err)
				}
			}
			g := start(t, opts)
			env := g.opts.Env
			add := func(contents ...string) {
				t.Helper()
				if _, err := queue.Add(ctx, &env, queue.AddInput{Contents: contents}); err != nil {
					t.Fatal(err)
				}
			}
			add("first")
			first, err := queue.EventsSince(ctx, &env, 0, 1)
			if err != nil || len(first) != 1 {
				t.Fatalf("the first event: %v %v", first, err)
			}
			more := make([]string, queue.EventRetention+queue.TrimBatch)
			for i := range more {
				more[i] = "more"
			}
			add(more...)
			if m := g.events(fmt.Sprint(first[0].ID)).next(t); m.event != "resync" || m.data["reason"] != "events_expired" {
				t.Fatalf("resuming after an expired event: %+v", m)
			}
			kept, err := queue.EventsSince(ctx, &env, 0, 2)
			if err != nil || len(kept) != 2 {
				t.Fatalf("stored events: %v %v", kept, err)
			}
			if m := g.events(fmt.Sprint(kept[0].ID)).next(t); m.event != "instruction.created" || m.id != fmt.Sprint(kept[1].ID) {
				t.Fatalf("resuming after a stored event: %+v", m)
			}
		})
	}
}

// An idle stream carries keep-alive comments, so proxies and browsers do
// not close it.
func TestEventsKeepAlive(t *testing.T) {
	g := start(t, gateway.Options{KeepAlive: 100 * time.Millisecond})
	stream := g.events("")
	comments := make(chan error, 1)
	go func() {
		for n := 0; n < 3; {
			line, err := stream.r.ReadString('\n')
			if err != nil {
				comments <- err
				return
			}
			if strings.HasPrefix(line, ": keep-alive") {
				n++
			}
		}
		comments <- nil
	}()
	select {
	case err := <-comments:
		if err != nil {
			t.Fatalf("event stream: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fewer than 3 keep-alive comments in 10 s on a stream that asks for one every 100 ms")
	}
}

func TestAgentTurningIdleIsAnnounced(t *testing.T) {
	g := start(t, gateway.Options{})
	g.do("PATCH", "/api/config", `{"agent_stale_after_seconds": 1, "default_wait_seconds": 0}`)
	stream := g.events("")
	g.lm("queue", "next", "--agent-id", "sleepy")
	for range 20 {
		m := stream.expect(t, "status.changed")
		d := m.data["data"].(map[string]any)
		if d["agent_id"] == "sleepy" && d["connected"] == false {
			if m.id != "" {
				t.Fatalf("an idle announcement is not a stored event, yet it has id %s", m.id)
			}
			return
		}
	}
	t.Fatal("the agent never turned idle")
}

func TestEnhanceRouteBehindTheToken(t *testing.T) {
	t.Setenv("LM_MODEL", "") // no model, whatever the machine has
	g := start(t, gateway.Options{Token: "open-sesame"})
	if code, _ := g.do("POST", "/ollama/enhance", `{"prompt": "tidy the README"}`, "Authorization", ""); code != 401 {
		t.Fatalf("without the token: %d", code)
	}
	code, body := g.do("POST", "/ollama/enhance", `{"prompt": "tidy the README"}`, "Authorization", "Bearer open-sesame", "X-Client-Name", "vscode")
	if code != 200 || body["prompt"] != "tidy the README" || body["enhanced"] != false || body["client"] != "vscode" ||
		!strings.Contains(body["reason"].(string), "no model is configured") {
		t.Fatalf("POST /ollama/enhance = %d %v", code, body)
	}
}

// Shutting down ends event streams and waiting MCP calls at once, lets a
// request in flight finish its work, and loses nothing.
func TestGracefulShutdown(t *testing.T) {
	log := &testkit.Buffer{}
	g := start(t, gateway.Options{Log: slog.New(slog.NewTextHandler(log, nil))})
	g.do("PATCH", "/api/config", `{"default_wait_seconds": 60}`)
	stream := g.events("")
	mcpDone := make(chan string, 1)
	go func() {
		_, body := rpc(t, g, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_user_request","arguments":{"agent_id":"waiter"}}}`)
		mcpDone <- body
	}()
	for i := 0; ; i++ {
		if out := g.lm("queue", "status", "-r", "--jq", `.agents[] | select(.agent_id == "waiter") | .waiting`); strings.TrimSpace(out) == "true" {
			break
		}
		if i == 200 {
			t.Fatal("the MCP call is not waiting")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// An add whose body is still on its way when the shutdown begins. With
	// "Expect: 100-continue" the server asks for the body only once the
	// handler reads it, so the 100 shows the request is in its handler.
	body, sendBody := io.Pipe()
	const add = `{"content": "in flight at shutdown"}`
	inHandler := make(chan struct{})
	added := make(chan int, 1)
	go func() {
		trace := &httptrace.ClientTrace{Got100Continue: func() { close(inHandler) }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "POST", g.url+"/api/instructions", body)
		req.ContentLength = int64(len(add))
		req.Header.Set("Expect", "100-continue")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", g.auth())
		res, err := (&http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}).Do(req)
		if err != nil {
			t.Errorf("the add in flight: %v", err)
			added <- 0
			return
		}
		res.Body.Close()
		added <- res.StatusCode
	}()
	select {
	case <-inHandler:
	case <-time.After(20 * time.Second):
		t.Fatal("the add never reached its handler")
	}
	stopped := make(chan struct{})
	go func() { g.stop(); close(stopped) }()

	// The event stream and the waiting MCP call end at once, while the add
	// is still in flight.
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, stream.r); ended <- err }()
	for _, what := range []string{"the event stream", "the waiting MCP call"} {
		select {
		case <-ended:
		case answer := <-mcpDone:
			if strings.Contains(answer, "instruction") {
				t.Errorf("the waiting MCP call answered %q", answer)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s did not end when the shutdown began", what)
		}
	}
	select {
	case <-stopped:
		t.Fatal("the gateway stopped before the add in flight finished")
	default:
	}

	// The rest of the body arrives: the add commits and is answered.
	io.WriteString(sendBody, add)
	sendBody.Close()
	if code := <-added; code != 201 {
		t.Fatalf("the add in flight at shutdown answered %d, want 201", code)
	}
	<-stopped
	if strings.Contains(log.String(), "grace period") {
		t.Errorf("the shutdown ran out its grace period:\n%s", log.String())
	}
	if out := g.lm("queue", "list", "--status", "pending", "-r", "--jq", ".items[].content"); strings.TrimSpace(out) != "in flight at shutdown" {
		t.Fatalf("pending after the shutdown: %q", out)
	}
	// The cancelled call records that it no longer waits.
	for i := 0; strings.TrimSpace(g.lm("queue", "status", "-r", "--jq", `.agents[] | select(.agent_id == "waiter") | .waiting`)) != "false"; i++ {
		if i == 200 {
			t.Fatal("the agent still shows as waiting after its call was cancelled")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A client that stalls while sending its headers or its body loses the
// connection, or gets an error, instead of holding it forever.
func TestStalledRequestsTimeOut(t *testing.T) {
	t.Cleanup(gateway.SetReadTimeouts(300*time.Millisecond, 600*time.Millisecond))
	g := start(t, gateway.Options{})
	addr := strings.TrimPrefix(g.url, "http://")
	for _, c := range []struct{ name, sent, want string }{
		{"headers never finished", "GET /api/status HTTP/1.1\r\nHost: " + addr + "\r\n", ""},
		{"body never finished", "POST /api/instructions HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: " + g.auth() + "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"content\": ", "HTTP/1.1 400"},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, c.sent)
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		answer, err := io.ReadAll(conn)
		conn.Close()
		var timeout net.Error
		if errors.As(err, &timeout) && timeout.Timeout() {
			t.Errorf("%s: the connection stayed open for 20 s", c.name)
			continue
		}
		if !strings.HasPrefix(string(answer), c.want) {
			t.Errorf("%s: answered %q, want %q", c.name, answer, c.want)
		}
	}
}

// An HTTP client names an instruction by its whole id: a prefix, which lm's
// command line accepts, must not delete (or show, edit, move) the one it
// happens to match.
func TestAPIMatchesInstructionIDsWhole(t *testing.T) {
	g := start(t, gateway.Options{})
	_, body := g.do("POST", "/api/instructions", `{"content": "keep me"}`)
	id := body["item"].(map[string]any)["id"].(string)
	prefix := id[:7]
	for _, c := range []struct{ method, path, body string }{
		{"DELETE", "/api/instructions/" + prefix, ""},
		{"GET", "/api/instructions/" + prefix, ""},
		{"PATCH", "/api/instructions/" + prefix, `{"content": "changed"}`},
		{"POST", "/api/instructions/" + prefix + "/move", `{"to": 1}`},
	} {
		if code, env := g.do(c.method, c.path, c.body); code != 404 || env["error_category"] != "not_found" {
			t.Errorf("%s %s = %d %v, want 404 not_found", c.method, c.path, code, env)
		}
	}
	if code, body := g.do("GET", "/api/instructions/"+strings.ToLower(id), ""); code != 200 || body["item"].(map[string]any)["content"] != "keep me" {
		t.Errorf("GET the whole id = %d %v, want the instruction untouched", code, body)
	}
	// The command line keeps its convenience.
	if out := g.lm("queue", "show", prefix, "-r", "--jq", ".item.content"); out != "keep me\n" {
		t.Errorf("lm queue show PREFIX = %q", out)
	}
}

// PATCH /api/config takes spec 000's nullable default_empty_response (null
// clears it, so an empty wait gives result_type empty) and names only the
// fields HTTP takes when one is unknown.
func TestAPIConfigNullAndFields(t *testing.T) {
	g := start(t, gateway.Options{})
	if code, cfg := g.do("PATCH", "/api/config", `{"default_empty_response": "come back later"}`); code != 200 || cfg["default_empty_response"] != "come back later" {
		t.Fatalf("PATCH a text = %d %v", code, cfg)
	}
	if code, cfg := g.do("PATCH", "/api/config", `{"default_wait_seconds": 0}`); code != 200 || cfg["default_empty_response"] != "come back later" {
		t.Fatalf("PATCH without the field changed it: %d %v", code, cfg)
	}
	if code, cfg := g.do("PATCH", "/api/config", `{"default_empty_response": null}`); code != 200 || cfg["default_empty_response"] != "" {
		t.Fatalf("PATCH null = %d %v, want it cleared", code, cfg)
	}
	if out := g.lm("queue", "next", "--agent-id", "tester", "-r", "--jq", ".result_type"); out != "empty\n" {
		t.Errorf("an empty wait after clearing gave %q, want result_type empty", out)
	}
	for _, body := range []string{`{"colour": "red"}`, `{"assign": ["default_wait_seconds=3"]}`} {
		code, env := g.do("PATCH", "/api/config", body)
		hint, _ := env["suggestion"].(string)
		if code != 422 || !strings.Contains(hint, "accepted fields: agent_stale_after_seconds, default_empty_response, default_wait_seconds") ||
			strings.Contains(hint, "assign") {
			t.Errorf("PATCH %s = %d %v, want 422 listing the HTTP fields only", body, code, env)
		}
	}
	if _, cfg := g.do("GET", "/api/config", ""); cfg["default_wait_seconds"] != 0.0 {
		t.Errorf("a refused PATCH changed the settings: %v", cfg)
	}
}

// GET /health covers every service the gateway runs: the servers, the
// model behind prompt enhancement (here one that is configured and gone,
// which makes the gateway degraded) and the enhancement cache.
func TestHealthCoversTheModelAndTheEnhancementCache(t *testing.T) {
	home := t.TempDir()
	gone := httptest.NewServer(http.NotFoundHandler())
	url := gone.URL
	gone.Close()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("[model]\nprovider = \"ollama\"\nurl = \""+url+"\"\nmodel = \"m\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startIn(t, home, gateway.Options{})
	code, body := g.do("GET", "/health", "")
	model, _ := body["model"].(map[string]any)
	if code != 200 || body["status"] != "degraded" || model["configured"] != true || model["reachable"] != false ||
		model["error_category"] != "ollama_unavailable" || body["enhancement_cache"] == nil {
		t.Fatalf("GET /health: %d %v", code, body)
	}
}
