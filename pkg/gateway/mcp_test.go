package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/gateway"
	"lmtool.dev/lm/pkg/mcpx"
	"lmtool.dev/lm/pkg/testkit"
)

func callNext(t *testing.T, c *client.Client) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "gateway-test", Version: "1"},
	}}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "get_user_request", Arguments: map[string]any{"agent_id": "http-agent"}}})
	if err != nil {
		t.Fatalf("call get_user_request: %v", err)
	}
	if res.IsError {
		t.Fatalf("get_user_request failed: %+v", res.Content)
	}
	var out map[string]any
	raw, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(raw, &out)
	return out
}

func TestMCPStreamableHTTP(t *testing.T) {
	g := start(t, gateway.Options{Token: "tok"})
	g.do("POST", "/api/instructions", `{"content": "over streamable HTTP"}`, "Authorization", "Bearer tok")
	c, err := client.NewStreamableHttpClient(g.url+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer tok"}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out := callNext(t, c)
	if out["result_type"] != "instruction" || out["instruction"].(map[string]any)["content"] != "over streamable HTTP" {
		t.Fatalf("get_user_request = %v", out)
	}
	_, body := g.do("GET", "/api/instructions?status=consumed", "", "Authorization", "Bearer tok")
	if item := body["items"].([]any)[0].(map[string]any); item["consumed_by_agent_id"] != "http-agent" {
		t.Fatalf("consumed by %v", item["consumed_by_agent_id"])
	}
}

func TestMCPLegacySSE(t *testing.T) {
	g := start(t, gateway.Options{})
	g.do("POST", "/api/instructions", `{"content": "over legacy SSE"}`)
	c, err := client.NewSSEMCPClient(g.url+"/mcp/sse", transport.WithHeaders(g.authHeaders()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start SSE client: %v", err)
	}
	out := callNext(t, c)
	if out["result_type"] != "instruction" || out["instruction"].(map[string]any)["content"] != "over legacy SSE" {
		t.Fatalf("get_user_request = %v", out)
	}
}

// rpc posts one JSON-RPC message to /mcp with the given extra headers and
// returns the response with its whole body: JSON, or an event stream that
// ends with the answer. It may run in a goroutine: a failed request is an
// error and a zero response.
func rpc(t *testing.T, g *gw, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", g.url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	req.Header.Set("Authorization", g.auth())
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return &http.Response{Header: http.Header{}}, ""
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res, string(data)
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func TestMCPRejectsForeignHostAndOrigin(t *testing.T) {
	g := start(t, gateway.Options{})
	for _, h := range [][]string{{"Host", "attacker.example"}, {"Origin", "http://attacker.example"}} {
		if res, _ := rpc(t, g, initialize, h...); res.StatusCode < 400 || res.StatusCode >= 500 {
			t.Errorf("%s %s: status %d, want 4xx", h[0], h[1], res.StatusCode)
		}
	}
	if res, _ := rpc(t, g, initialize, "Origin", g.url); res.StatusCode != 200 {
		t.Errorf("own origin: status %d", res.StatusCode)
	}
}

func TestMCPStatefulSessionEndsWithDelete(t *testing.T) {
	g := start(t, gateway.Options{Sessions: mcpx.Sessions{Stateful: true}})
	res, _ := rpc(t, g, initialize)
	session := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != 200 || session == "" {
		t.Fatalf("initialize: status %d, session %q", res.StatusCode, session)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if res, _ := rpc(t, g, list, "Mcp-Session-Id", session); res.StatusCode != 200 {
		t.Fatalf("tools/list in the session: %d", res.StatusCode)
	}
	req, _ := http.NewRequest("DELETE", g.url+"/mcp", nil)
	req.Header.Set("Authorization", g.auth())
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("MCP-Protocol-Version", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	del, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	del.Body.Close()
	if del.StatusCode != 200 {
		t.Fatalf("DELETE session: %d", del.StatusCode)
	}
	if res, _ := rpc(t, g, list, "Mcp-Session-Id", session); res.StatusCode != 404 {
		t.Fatalf("request in a deleted session: %d, want 404", res.StatusCode)
	}
}

// A stateful session nobody ends is ended once it has idled past the TTL:
// its client gets 404 (and initializes again, as the protocol says), and
// the gateway does not keep it.
func TestMCPStatefulSessionExpiresWhenIdle(t *testing.T) {
	g := start(t, gateway.Options{Sessions: mcpx.Sessions{Stateful: true, IdleTTL: time.Second}})
	res, _ := rpc(t, g, initialize)
	session := res.Header.Get("Mcp-Session-Id")
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if res, _ := rpc(t, g, list, "Mcp-Session-Id", session); res.StatusCode != 200 {
		t.Fatalf("tools/list in a fresh session: %d", res.StatusCode)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		time.Sleep(500 * time.Millisecond)
		res, _ := rpc(t, g, list, "Mcp-Session-Id", session)
		if res.StatusCode == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a session idle past its TTL still answers %d", res.StatusCode)
		}
		// This request touched the session; let it idle again.
		time.Sleep(2 * time.Second)
	}
	if res, _ := rpc(t, g, initialize); res.StatusCode != 200 || res.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("a client cannot initialize again after expiry: %d", res.StatusCode)
	}
}

// The table of stateful sessions is bounded: past the limit, a new
// session ends the oldest.
func TestMCPStatefulSessionsAreBounded(t *testing.T) {
	g := start(t, gateway.Options{Sessions: mcpx.Sessions{Stateful: true, Max: 3}})
	var sessions []string
	for range 5 {
		res, _ := rpc(t, g, initialize)
		sessions = append(sessions, res.Header.Get("Mcp-Session-Id"))
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	for i, id := range sessions {
		res, _ := rpc(t, g, list, "Mcp-Session-Id", id)
		want := 200
		if i < 2 {
			want = 404
		}
		if res.StatusCode != want {
			t.Errorf("session %d of 5 with a limit of 3: status %d, want %d", i+1, res.StatusCode, want)
		}
	}
}

// callTool calls a tool on an initialized client and returns its
// structured content.
func callTool(t *testing.T, c *client.Client, name string, args map[string]any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s failed: %+v", name, res.Content)
	}
	var out map[string]any
	raw, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(raw, &out)
	return out
}

// By default /mcp keeps no sessions: it hands out a session id, which
// tells clients apart, but accepts any well-formed one, so an agent that
// initialized against one gateway process goes on calling the next one
// after a restart.
func TestMCPStatelessSurvivesRestart(t *testing.T) {
	g := start(t, gateway.Options{})
	res, _ := rpc(t, g, initialize)
	session := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != 200 || session == "" {
		t.Fatalf("stateless initialize: status %d, session %q", res.StatusCode, session)
	}
	g.restart()
	if res, _ := rpc(t, g, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "Mcp-Session-Id", session); res.StatusCode != 200 {
		t.Fatalf("a session from before the restart: status %d", res.StatusCode)
	}
	g.do("POST", "/api/instructions", `{"content": "before the restart"}`)
	g.do("POST", "/api/instructions", `{"content": "after the restart"}`)
	c, err := client.NewStreamableHttpClient(g.url+"/mcp", transport.WithHTTPHeaders(g.authHeaders()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if out := callNext(t, c); out["instruction"].(map[string]any)["content"] != "before the restart" {
		t.Fatalf("first call: %v", out)
	}
	g.restart()
	out := callTool(t, c, "get_user_request", map[string]any{"agent_id": "http-agent"})
	if out["result_type"] != "instruction" || out["instruction"].(map[string]any)["content"] != "after the restart" {
		t.Fatalf("the same client after a restart: %v", out)
	}
}

// One stateful session carries several streams at once: the standalone
// GET stream, two tool calls that wait for work, and a quick request
// answered while they wait.
func TestMCPStatefulConcurrentStreams(t *testing.T) {
	g := start(t, gateway.Options{Sessions: mcpx.Sessions{Stateful: true}})
	g.do("PATCH", "/api/config", `{"default_wait_seconds": 60}`)
	res, _ := rpc(t, g, initialize)
	session := res.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatal("no session id")
	}
	if res, _ := rpc(t, g, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", session); res.StatusCode != 202 {
		t.Fatalf("initialized notification: %d", res.StatusCode)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", g.url+"/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", g.auth())
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("MCP-Protocol-Version", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	listen, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer listen.Body.Close()
	if listen.StatusCode != 200 || !strings.HasPrefix(listen.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /mcp in the session: %d %s", listen.StatusCode, listen.Header.Get("Content-Type"))
	}

	answers := make(chan string, 2)
	for i, agent := range []string{"agent-a", "agent-b"} {
		call := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_user_request","arguments":{"agent_id":%q}}}`, 10+i, agent)
		go func() {
			res, body := rpc(t, g, call, "Mcp-Session-Id", session)
			if res.StatusCode != 200 {
				t.Errorf("%s's call: %d %s", agent, res.StatusCode, body)
			}
			answers <- body
		}()
	}
	for i := 0; ; i++ {
		_, st := g.do("GET", "/api/status", "")
		waiting := 0
		for _, a := range st["agents"].([]any) {
			if a.(map[string]any)["waiting"] == true {
				waiting++
			}
		}
		if waiting == 2 {
			break
		}
		if i == 200 {
			t.Fatalf("the two calls are not both waiting: %v", st["agents"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res, body := rpc(t, g, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, "Mcp-Session-Id", session); res.StatusCode != 200 || !strings.Contains(body, "get_user_request") {
		t.Fatalf("tools/list while two calls wait: %d %.200s", res.StatusCode, body)
	}
	g.do("POST", "/api/instructions", `{"content": "first for whoever waits"}`)
	g.do("POST", "/api/instructions", `{"content": "second for whoever waits"}`)
	var got []string
	for range 2 {
		select {
		case a := <-answers:
			got = append(got, a)
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of the waiting calls answered", len(got))
		}
	}
	joined := strings.Join(got, "\n")
	if !strings.Contains(joined, "first for whoever waits") || !strings.Contains(joined, "second for whoever waits") {
		t.Fatalf("the two calls got:\n%s", joined)
	}
}

// The gateway's log tells each instruction's life, whichever process
// changed it, and each get_user_request served with its agent, wait and
// result.
func TestLogTellsLifecycleAndCalls(t *testing.T) {
	log := &testkit.Buffer{}
	g := start(t, gateway.Options{Log: slog.New(slog.NewTextHandler(log, nil))})
	g.lm("queue", "add", "from a shell")
	g.do("POST", "/api/instructions", `{"content": "from the page"}`)
	id := strings.TrimSpace(g.lm("queue", "list", "--status", "pending", "-r", "--jq", ".items[1].id"))
	g.do("PATCH", "/api/instructions/"+id, `{"content": "reworded"}`)
	g.mcpNext("stdio-agent")
	c, err := client.NewStreamableHttpClient(g.url+"/mcp", transport.WithHTTPHeaders(g.authHeaders()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	callNext(t, c)
	g.do("POST", "/api/instructions", `{"content": "short-lived"}`)
	gone := strings.TrimSpace(g.lm("queue", "list", "--status", "pending", "-r", "--jq", ".items[0].id"))
	g.do("DELETE", "/api/instructions/"+gone, "")
	want := []string{
		`msg="instruction created"`,
		`msg="instruction updated" event=`,
		`msg="instruction consumed" event=`,
		`agent_id=stdio-agent`,
		`agent_id=http-agent`,
		`msg="tool call" tool=get_user_request error=false agent_id=http-agent result_type=instruction waited_seconds=`,
		`msg="instruction deleted" event=`,
	}
	for i := 0; ; i++ {
		missing := ""
		for _, w := range want {
			if !strings.Contains(log.String(), w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		if i == 200 {
			t.Fatalf("the log lacks %s:\n%s", missing, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The log credits a get_user_request without agent_id to the agent the
// queue credited it to (the name its token proves), not to the empty
// argument, and
// what operations say for a terminal (a warning) joins the JSON log as a
// record of its own, never as a plain-text line.
func TestLogIsJSONAndNamesTheResolvedAgent(t *testing.T) {
	log := &testkit.Buffer{}
	g := start(t, gateway.Options{Log: slog.New(slog.NewJSONHandler(log, nil)), Sessions: mcpx.Sessions{Stateful: true}})
	g.do("POST", "/api/instructions", `{"content": "for a nameless call"}`)
	c, err := client.NewStreamableHttpClient(g.url+"/mcp", transport.WithHTTPHeaders(g.agentHeaders("token-agent")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "named-client", Version: "1"},
	}}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "get_user_request"}}); err != nil || res.IsError {
		t.Fatalf("get_user_request: %v %+v", err, res)
	}
	_, st := g.do("GET", "/api/status", "")
	credited := st["agent"].(map[string]any)["agent_id"]
	if credited != "token-agent" {
		t.Fatalf("the queue credited %v, want the name the agent's token proves", credited)
	}
	if code, body := g.do("PATCH", "/api/config", `{"default_wait_seconds": 120}`); code != 200 || body["warnings"] == nil {
		t.Fatalf("PATCH a long wait = %d %v, want a warning in the answer", code, body)
	}

	var call, warning map[string]any
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		if rec["msg"] == "tool call" && rec["tool"] == "get_user_request" {
			call = rec
		}
		if msg, _ := rec["msg"].(string); strings.HasPrefix(msg, "default_wait_seconds is 120") {
			warning = rec
		}
	}
	if call == nil || call["agent_id"] != credited || call["result_type"] != "instruction" {
		t.Errorf("the tool call record: %v, want agent_id %v", call, credited)
	}
	if warning == nil || warning["level"] != "WARN" {
		t.Errorf("the settings warning is not a WARN record of the log:\n%s", log.String())
	}
}

// A tool call on /mcp is logged once, by the call log; the request log
// keeps its Info lines for failures and for changes through the API.
func TestRequestLogLeavesToolCallsToTheCallLog(t *testing.T) {
	log := &testkit.Buffer{}
	g := start(t, gateway.Options{Log: slog.New(slog.NewTextHandler(log, nil))})
	if res, body := rpc(t, g, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"lm_version","arguments":{}}}`); res.StatusCode != 200 {
		t.Fatalf("tools/call: %d %s", res.StatusCode, body)
	}
	g.do("POST", "/api/instructions", `{"content": "logged"}`)
	g.do("POST", "/mcp/nope", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	lines := log.String()
	for _, want := range []string{`msg="tool call" tool=lm_version`, `msg=request method=POST path=/api/instructions status=201`, `msg=request method=POST path=/mcp/nope status=404`} {
		if !strings.Contains(lines, want) {
			t.Errorf("the log lacks %s:\n%s", want, lines)
		}
	}
	if strings.Contains(lines, "path=/mcp ") {
		t.Errorf("a successful MCP message has a request line of its own:\n%s", lines)
	}
}
