package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/gateway"
	"lmtool.dev/lm/pkg/gateway/token"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/registry"
	"lmtool.dev/lm/pkg/servers"
	"lmtool.dev/lm/pkg/store"
)

// A gateway started without a token of its own makes one in LM_HOME,
// readable by its owner only, keeps it across restarts, and refuses every
// request that does not carry it.
func TestTokenIsOnByDefault(t *testing.T) {
	home := t.TempDir()
	opts := gateway.Options{Env: op.Env{Store: store.New(filepath.Join(home, "lm.db"), 0), Home: home, Stderr: io.Discard, Now: time.Now},
		Ops: registry.All(), Version: "test"}
	srv, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(token.PersonPath(home))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the token file: %v %v, want mode 0600", info, err)
	}
	data, _ := os.ReadFile(token.PersonPath(home))
	tok := strings.TrimSpace(string(data))
	if len(tok) < 40 || srv.PageURL("127.0.0.1:7437") != "http://127.0.0.1:7437/#token="+tok {
		t.Fatalf("token %q, page URL %s", tok, srv.PageURL("127.0.0.1:7437"))
	}
	// The next start reuses it: open pages and scripts keep working.
	again, err := gateway.New(opts)
	if err != nil || again.PageURL("h:1") != gateway.PageURL("h:1", tok) {
		t.Fatalf("second start: %v, %s", err, again.PageURL("h:1"))
	}

	g := &gw{t: t, store: filepath.Join(home, "lm.db"), opts: opts}
	g.serve("127.0.0.1:0")
	t.Cleanup(func() { g.stop() })
	for _, path := range []string{"/api/status", "/mcp", "/servers", "/info"} {
		if code, body := g.do("GET", path, ""); code != 401 || body["error_category"] != "unauthorized" {
			t.Errorf("GET %s without a token = %d %v", path, code, body)
		}
	}
	if code, _ := g.do("POST", "/api/instructions", `{"content": "sneaked in"}`); code != 401 {
		t.Errorf("POST /api/instructions without a token = %d", code)
	}
	g.opts.Token = tok
	if code, body := g.do("GET", "/api/status", ""); code != 200 || body["queue"].(map[string]any)["pending_count"] != 0.0 {
		t.Errorf("with the token = %d %v", code, body)
	}
	// The scheme is case-insensitive, as HTTP says.
	if code, _ := g.do("GET", "/api/status", "", "Authorization", "bearer "+tok); code != 200 {
		t.Errorf("'bearer' in lower case = %d", code)
	}
	if code, _ := g.do("GET", "/healthz", "", "Authorization", ""); code != 200 {
		t.Errorf("/healthz without a token = %d", code)
	}
}

// Two agents on the default stateless /mcp, neither giving an agent_id,
// wait at once: each keeps its own wait (neither supersedes the other),
// gets its own instruction, and has its own row in the status. It returns
// the agent ids of the two rows.
func twoAgentsWait(t *testing.T, g *gw, headers [2]map[string]string) []string {
	t.Helper()
	g.do("PATCH", "/api/config", `{"default_wait_seconds": 120}`)
	results := make(chan map[string]any, 2)
	for i, h := range headers {
		c, err := client.NewStreamableHttpClient(g.url+"/mcp", transport.WithHTTPHeaders(h))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		t.Cleanup(cancel)
		// The same client software twice, as two terminals running one
		// coding agent would be.
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
			ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "same-agent-app", Version: "1"}}}); err != nil {
			t.Fatalf("agent %d: initialize: %v", i, err)
		}
		go func() {
			res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "get_user_request"}})
			var out map[string]any
			if err == nil && !res.IsError {
				raw, _ := json.Marshal(res.StructuredContent)
				json.Unmarshal(raw, &out)
			}
			results <- out
		}()
	}
	var waiting []string
	for i := 0; len(waiting) < 2; i++ {
		if i == 600 {
			t.Fatalf("two agents never waited at once: %v", waiting)
		}
		time.Sleep(50 * time.Millisecond)
		_, st := g.do("GET", "/api/status", "")
		waiting = nil
		for _, a := range st["agents"].([]any) {
			if a := a.(map[string]any); a["waiting"] == true {
				waiting = append(waiting, a["agent_id"].(string))
			}
		}
	}
	g.do("POST", "/api/instructions", `{"contents": ["first", "second"]}`)
	got := map[string]bool{}
	for range 2 {
		out := <-results
		if out["result_type"] != "instruction" {
			t.Fatalf("an agent's wait ended without an instruction: %v", out)
		}
		got[out["instruction"].(map[string]any)["content"].(string)] = true
	}
	if !got["first"] || !got["second"] {
		t.Fatalf("the agents got %v", got)
	}
	_, list := g.do("GET", "/api/instructions?status=consumed", "")
	by := map[string]bool{}
	for _, it := range list["items"].([]any) {
		by[it.(map[string]any)["consumed_by_agent_id"].(string)] = true
	}
	for _, name := range waiting {
		if !by[name] {
			t.Errorf("the instructions were consumed by %v, not by the waiting agents %v", by, waiting)
		}
	}
	return waiting
}

// An agent token names its agent: calls without agent_id are attributed
// to the token's name, never to another client.
func TestAgentTokensNameAgents(t *testing.T) {
	g := start(t, gateway.Options{})
	home := filepath.Dir(g.store)
	claude, err := token.AddAgent(home, "claude", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	codex, err := token.AddAgent(home, "codex", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rows := twoAgentsWait(t, g, [2]map[string]string{{"Authorization": "Bearer " + claude}, {"Authorization": "Bearer " + codex}})
	if slices.Sort(rows); strings.Join(rows, " ") != "claude codex" {
		t.Errorf("rows %v, want claude and codex", rows)
	}

	// An agent token opens the agents' routes, not the person's.
	for _, c := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/servers", "", 200},
		{"POST", "/api/call", `{"server":"x","tool":"y"}`, 403},
		{"POST", "/servers/install", `{"package":"./pkg"}`, 403},
		{"POST", "/servers/reload", "", 403},
		{"DELETE", "/cache", "", 403},
	} {
		code, body := g.do(c.method, c.path, c.body, "Authorization", "Bearer "+claude)
		if code != c.status {
			t.Errorf("%s %s with an agent token = %d %v, want %d", c.method, c.path, code, body, c.status)
		}
		if code == 403 && !strings.Contains(body["error"].(string), `agent "claude"`) {
			t.Errorf("%s %s: the refusal does not name the caller: %v", c.method, c.path, body)
		}
	}
	// A removed token is refused from the next request.
	if err := token.RemoveAgent(home, "codex"); err != nil {
		t.Fatal(err)
	}
	if code, _ := g.do("GET", "/api/status", "", "Authorization", "Bearer "+codex); code != 401 {
		t.Errorf("a removed agent token = %d, want 401", code)
	}
}

// An agent token reads nothing of the queue that get_user_request does not
// hand it — /api/events is lm queue watch, open to the person unless
// granted — and cannot touch the person's Ask conversation, where a
// planted proposal is one the page's Approve would run.
func TestAgentTokenReadsNoQueueStreamNorAskThread(t *testing.T) {
	g := start(t, gateway.Options{})
	agent := g.agentHeaders("claude")["Authorization"]
	secret := "deploy with the key in ~/.ssh/other-agent"
	if code, _ := g.do("POST", "/api/instructions", `{"content":"`+secret+`"}`); code != 201 {
		t.Fatalf("adding an instruction: %d", code)
	}
	res := g.raw("GET", "/api/events?since=0", "Authorization", agent, "Accept", "text/event-stream")
	if res.StatusCode != 403 { // a stream: its body would not end
		t.Errorf("/api/events with an agent token: %d", res.StatusCode)
	} else if body, _ := io.ReadAll(res.Body); strings.Contains(string(body), secret) || !strings.Contains(string(body), "queue_watch") {
		t.Errorf("/api/events with an agent token: %s", body)
	}
	res.Body.Close()
	thread := "/api/ask/thread/pagesession1"
	if code, _ := g.do("PUT", thread, `{"turns":[{"said":"`+secret+`"}]}`); code != 200 {
		t.Fatalf("the person's PUT %s: %d", thread, code)
	}
	for _, c := range []struct{ method, body string }{{"GET", ""}, {"PUT", `{"turns":[{"proposal":{"tool":"planted"}}]}`}, {"DELETE", ""}} {
		code, got := g.do(c.method, thread, c.body, "Authorization", agent)
		if code != 403 || strings.Contains(fmt.Sprint(got), secret) {
			t.Errorf("%s %s with an agent token: %d %v", c.method, thread, code, got)
		}
	}
	if code, got := g.do("GET", thread, ""); code != 200 || !strings.Contains(fmt.Sprint(got), secret) || strings.Contains(fmt.Sprint(got), "planted") {
		t.Errorf("the person's conversation after the agent's tries: %d %v", code, got)
	}

	// The person who grants queue_watch to agents opens the stream to them.
	granted := start(t, gateway.Options{Env: op.Env{Grant: grant(t, "queue_watch")}})
	res = granted.raw("GET", "/api/events", "Authorization", granted.agentHeaders("claude")["Authorization"], "Accept", "text/event-stream")
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("/api/events for an agent granted queue_watch: %d", res.StatusCode)
	}
}

func grant(t *testing.T, names ...string) op.Grant {
	t.Helper()
	g, err := op.ParseGrant(names, registry.All())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// With --no-token, the page's routes are the person's and /mcp's callers
// anonymous agents, told apart by their MCP sessions.
func TestAnonymousAgentsStayApart(t *testing.T) {
	g := start(t, gateway.Options{NoToken: true})
	rows := twoAgentsWait(t, g, [2]map[string]string{{}, {}})
	if rows[0] == rows[1] || !strings.HasPrefix(rows[0], "agent-") || !strings.HasPrefix(rows[1], "agent-") {
		t.Errorf("two anonymous agents' rows: %v", rows)
	}
	if code, body := g.do("PATCH", "/api/config", `{"agent_stale_after_seconds": 60}`); code != 200 {
		t.Errorf("the page's settings without a token = %d %v", code, body)
	}
}

// NoToken is refused on an address beyond loopback.
func TestNoTokenOnlyOnLoopback(t *testing.T) {
	home := t.TempDir()
	srv, err := gateway.New(gateway.Options{Env: op.Env{Store: store.New(filepath.Join(home, "lm.db"), 0), Home: home, Stderr: io.Discard, Now: time.Now},
		Ops: registry.All(), Version: "test", NoToken: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = srv.Serve(context.Background(), ln)
	if err == nil || op.KindOf(err) != op.KindInvalid || !strings.Contains(err.Error(), "beyond loopback") {
		t.Fatalf("no token on 0.0.0.0: %v", err)
	}
}

// nonLoopbackIP is one of this machine's addresses that is not loopback.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Fatal("this machine has no IPv4 address beyond loopback to test a 0.0.0.0 gateway with")
	return ""
}

// Bound to every address, the gateway still refuses a request that names
// it by a domain name: a DNS-rebinding page would send Host: evil.example
// with a matching Origin.
func TestRebindingRefusedOnEveryAddress(t *testing.T) {
	g := start(t, gateway.Options{})
	g.stop()
	g.serve("0.0.0.0:0")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(g.url, "http://"))
	g.url = "http://" + net.JoinHostPort(nonLoopbackIP(t), port)
	code, body := g.do("POST", "/api/instructions", `{"content": "rebound"}`,
		"Host", "evil.example:"+port, "Origin", "http://evil.example:"+port)
	if code != 403 || body["error_category"] != "forbidden_host" {
		t.Errorf("rebound request to the LAN address = %d %v", code, body)
	}
	if out := g.lm("queue", "list", "-r", "--jq", ".items | length"); strings.TrimSpace(out) != "0" {
		t.Errorf("a rebound request added an instruction: %s", out)
	}
	// By its address, the same request is the gateway's own.
	if code, body := g.do("POST", "/api/instructions", `{"content": "by address"}`, "Origin", g.url); code != 201 {
		t.Errorf("by the LAN address = %d %v", code, body)
	}
}

// State-changing routes take JSON only: a text/plain body is one a page on
// another site can send without asking.
func TestStateChangingRoutesTakeJSONOnly(t *testing.T) {
	g := start(t, gateway.Options{})
	for _, path := range []string{"/api/instructions", "/mcp", "/messages", "/servers/install"} {
		code, body := g.do("POST", path, `{"content": "as text"}`, "Content-Type", "text/plain")
		if code != http.StatusUnsupportedMediaType || !strings.Contains(body["error"].(string), "application/json") {
			t.Errorf("POST %s as text/plain = %d %v", path, code, body)
		}
	}
	if out := g.lm("queue", "list", "-r", "--jq", ".items | length"); strings.TrimSpace(out) != "0" {
		t.Errorf("a text/plain body added an instruction: %s", out)
	}
	if code, _ := g.do("POST", "/api/instructions", `{"content": "as JSON"}`, "Content-Type", "application/json; charset=utf-8"); code != 201 {
		t.Errorf("JSON with a charset = %d", code)
	}
}

// Over HTTP, servers_ask only proposes: it never asks on the gateway's
// terminal, never runs a call (yes or not), and never starts a program.
func TestAskOverHTTPRunsNothing(t *testing.T) {
	// A model that proposes running the program, whatever is asked.
	proposal := `{"action":"call","tool":"echo","arguments":{"message":"x"},"reason":"asked to"}`
	m := newFakeModel(t, proposal, proposal, proposal, proposal)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(fmt.Sprintf("[model]\nmodel = \"tiny\"\nurl = %q\n", m.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startIn(t, home, gateway.Options{})
	agentTok, err := token.AddAgent(home, "claude", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "pwned")
	run := `{"command":["/bin/sh","-c","touch ` + marker + `"],"request":"do it"`
	for _, c := range []struct{ name, body, auth string }{
		{"the person, plainly", run + `}`, g.auth()},
		{"the person, with yes", run + `,"yes":true}`, g.auth()},
		{"an agent, with yes", run + `,"yes":true}`, "Bearer " + agentTok},
		{"an agent, dry run", run + `,"dry_run":true}`, "Bearer " + agentTok},
	} {
		code, body := g.do("POST", "/api/ask", c.body, "Authorization", c.auth)
		if code != http.StatusForbidden || body["error_category"] != "denied" {
			t.Errorf("%s: POST /api/ask = %d %v", c.name, code, body)
		}
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("POST /api/ask ran the command: %v", err)
	}
	if _, hist := g.do("GET", "/api/history", ""); hist["items"] != nil && len(hist["items"].([]any)) != 0 {
		t.Errorf("calls were recorded: %v", hist)
	}
}

// Installing a server is the person's: without the person's token it is
// refused before npm runs, and install scripts are for the command line.
func TestServersInstallIsThePersons(t *testing.T) {
	home := t.TempDir()
	g := startIn(t, home, gateway.Options{})
	agentTok, err := token.AddAgent(home, "claude", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pkg := t.TempDir()
	os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"mcp-server-evil","version":"1.0.0","bin":{"mcp-server-evil":"x.js"}}`), 0o644)
	install := `{"package":"` + pkg + `"}`
	for _, c := range []struct {
		name, body, auth string
		status           int
	}{
		{"no token", install, "", 401},
		{"an agent's token", install, "Bearer " + agentTok, 403},
		{"the person, allowing scripts", `{"package":"` + pkg + `","allow_scripts":true}`, g.auth(), 403},
		{"the person, with a field the installer does not take", `{"package":"` + pkg + `","prefix":"/tmp"}`, g.auth(), 400},
	} {
		if code, body := g.do("POST", "/servers/install", c.body, "Authorization", c.auth); code != c.status {
			t.Errorf("%s: POST /servers/install = %d %v, want %d", c.name, code, body, c.status)
		}
	}
	if _, err := os.Stat(servers.NodePrefix(home)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("npm ran: %s exists (%v)", servers.NodePrefix(home), err)
	}
	if _, err := os.Stat(servers.Path(home)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the configuration changed: %v", err)
	}
}

// A spec 002 client id belongs to whoever opened its stream: another
// caller who learns it cannot post calls in its name.
func TestSpec002ClientIDsAreBoundToTheirCaller(t *testing.T) {
	home := t.TempDir()
	g := startIn(t, home, gateway.Options{})
	claude, err := token.AddAgent(home, "claude", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	codex, err := token.AddAgent(home, "codex", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	stream := openSSE(t, g.url, "Authorization", "Bearer "+claude)
	_, hello := stream.next()
	id, _ := hello["clientId"].(string)
	post := `{"clientId":"` + id + `","tool":"queue_add","parameters":{"content":"in claude's name"}}`
	if code, body := g.do("POST", "/messages", post, "Authorization", "Bearer "+codex); code != 404 || body["error_category"] != "unknown_client_id" {
		t.Errorf("another agent posting for claude's stream = %d %v", code, body)
	}
	if out := g.lm("queue", "list", "-r", "--jq", ".items | length"); strings.TrimSpace(out) != "0" {
		t.Errorf("the call ran: %s", out)
	}
	if code, _ := g.do("POST", "/messages", post, "Authorization", "Bearer "+claude); code != 202 {
		t.Errorf("claude posting for its own stream = %d", code)
	}
}
