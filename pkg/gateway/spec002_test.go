package gateway_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/gateway"
	"lmtool.dev/lm/pkg/npmtest"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/registry"
	"lmtool.dev/lm/pkg/servers"
)

// sseStream reads Server-Sent Events from a response, one event at a time.
type sseStream struct {
	t   *testing.T
	r   *bufio.Reader
	res *http.Response
}

// openSSE opens GET /sse with optional headers (name, value, …).
func openSSE(t *testing.T, url string, header ...string) *sseStream {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/sse", nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return &sseStream{t: t, r: bufio.NewReader(res.Body), res: res}
}

// next returns the next event's name ("" for a plain message) and data,
// skipping comments (keep-alives) and retry lines.
func (s *sseStream) next() (string, map[string]any) {
	s.t.Helper()
	name, data := "", ""
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			s.t.Fatalf("stream ended: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && data != "":
			var v map[string]any
			if err := json.Unmarshal([]byte(data), &v); err != nil {
				s.t.Fatalf("event data is not JSON: %s", data)
			}
			return name, v
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data += strings.TrimPrefix(line, "data: ")
		}
	}
}

func TestSpec002Protocol(t *testing.T) {
	// Without tokens, its callers are anonymous agents.
	g := start(t, gateway.Options{NoToken: true})

	status, info := g.do("GET", "/info", "")
	if status != 200 || info["name"] != "lm" || info["tools"].(float64) < 1 {
		t.Fatalf("GET /info: %d %v", status, info)
	}
	status, tools := g.do("GET", "/tools", "")
	names := map[string]bool{}
	for _, tool := range tools["tools"].([]any) {
		names[tool.(map[string]any)["name"].(string)] = true
	}
	// Spec 002's clients are agents: the agent profile, nothing more.
	if status != 200 || !names["get_user_request"] || !names["servers_call"] || names["queue_add"] || names["jobs_start"] {
		t.Fatalf("GET /tools: %d, names %v (get_user_request and servers_call served; the person's queue_add and the CLI-only jobs_start not)", status, names)
	}

	stream := openSSE(t, g.url, "Authorization", g.auth())
	if ct := stream.res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("GET /sse: Content-Type %q", ct)
	}
	name, named := stream.next()
	_, plain := stream.next()
	id, _ := named["clientId"].(string)
	if name != "connected" || named["type"] != "connected" || id == "" || plain["clientId"] != id {
		t.Fatalf("connected event: named %q %v, plain %v", name, named, plain)
	}

	// Its clients are agents: the person's queue administration is
	// refused, the agent profile runs.
	body := `{"clientId":"` + id + `","tool":"queue_add","parameters":{"content":"from the web client"}}`
	if status, out := g.do("POST", "/messages", body); status != 202 || out["requestId"] == "" {
		t.Fatalf("POST /messages: %d %v", status, out)
	}
	if name, res := stream.next(); name != "tool_result" || res["success"] != false || res["error"].(map[string]any)["error_category"] != "denied" {
		t.Fatalf("queue_add from an agent: %q %v", name, res)
	}
	g.do("POST", "/messages", `{"clientId":"`+id+`","tool":"servers_list","parameters":{}}`)
	name, res := stream.next()
	if servers, _ := res["result"].(map[string]any)["servers"].([]any); name != "tool_result" || res["success"] != true || servers == nil {
		t.Fatalf("tool_result: %q %v", name, res)
	}

	// invalid parameters come back as a failed tool_result with lm's envelope
	g.do("POST", "/messages", `{"clientId":"`+id+`","tool":"servers_list","parameters":{"contnt":"x"}}`)
	if _, res := stream.next(); res["success"] != false || !strings.Contains(res["error"].(map[string]any)["error"].(string), "contnt") {
		t.Fatalf("invalid parameters: %v", res)
	}
	// an agent over the web may not start programs through servers_call
	g.do("POST", "/messages", `{"clientId":"`+id+`","tool":"servers_call","parameters":{"tool":"x","command":["true"]}}`)
	if _, res := stream.next(); res["error"].(map[string]any)["exit_code"].(float64) != 5 {
		t.Fatalf("stdio command over /messages: %v", res)
	}

	for _, tc := range []struct {
		body     string
		status   int
		category string
	}{
		{`{"tool":"queue_add","parameters":{}}`, 400, "missing_client_id"},
		{`{"clientId":"nope","tool":"queue_add"}`, 404, "unknown_client_id"},
		{`{"clientId":"` + id + `","tool":"no_such_tool"}`, 404, "unknown_tool"},
		{`{"clientId":"` + id + `","tool":"jobs_start"}`, 404, "unknown_tool"},
		{`not json`, 400, "bad_json"},
	} {
		t.Run(tc.body, func(t *testing.T) {
			status, out := g.do("POST", "/messages", tc.body)
			if status != tc.status || out["error_category"] != tc.category {
				t.Errorf("POST /messages %s: %d %v, want %d %s", tc.body, status, out, tc.status, tc.category)
			}
		})
	}

	// the client id dies with its stream
	stream.res.Body.Close()
	probe := `{"clientId":"` + id + `","tool":"queue_status"}`
	for i := 0; ; i++ {
		status, _ := g.do("POST", "/messages", probe)
		if status == 404 {
			break
		}
		if i == 200 {
			t.Fatalf("client id still accepted after its stream closed (status %d)", status)
		}
	}
}

func TestSpec002KeepsTheGatewaysGuards(t *testing.T) {
	g := start(t, gateway.Options{Token: "s3cret"})
	for _, path := range []string{"/info", "/tools", "/sse"} {
		if status, out := g.do("GET", path, "", "Authorization", ""); status != 401 || out["error_category"] != "unauthorized" {
			t.Errorf("GET %s without the token: %d %v", path, status, out)
		}
	}
	if status, _ := g.do("POST", "/messages", `{"clientId":"x"}`, "Authorization", ""); status != 401 {
		t.Errorf("POST /messages without the token: %d", status)
	}
	if status, _ := g.do("GET", "/info", "", "Authorization", "Bearer s3cret"); status != 200 {
		t.Errorf("GET /info with the token: %d", status)
	}
	if status, out := g.do("GET", "/info", "", "Authorization", "Bearer s3cret", "Origin", "http://evil.example"); status != 403 || out["error_category"] != "forbidden_origin" {
		t.Errorf("GET /info from another origin: %d %v", status, out)
	}
	stream := openSSE(t, g.url, "Authorization", "Bearer s3cret")
	if name, ev := stream.next(); name != "connected" || ev["clientId"] == "" {
		t.Fatalf("authorized /sse: %q %v", name, ev)
	}
}

func TestSpec002ServesTheSupervisedServersTools(t *testing.T) {
	everything := npmtest.Skip(t, "mcp-server-everything")
	home := t.TempDir()
	cfg := `{"mcpServers": {"everything": {"command": "` + everything + `", "auto_start": true}}}`
	if err := os.WriteFile(servers.Path(home), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startIn(t, home, gateway.Options{})
	// The server starts in the background; its tools appear once it runs.
	var echo map[string]any
	for deadline := time.Now().Add(time.Minute); echo == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("GET /tools never listed everything__echo")
		}
		_, tools := g.do("GET", "/tools", "")
		for _, tool := range tools["tools"].([]any) {
			if tool.(map[string]any)["name"] == "everything__echo" {
				echo = tool.(map[string]any)
			}
		}
	}
	if props, _ := echo["parameters"].(map[string]any)["properties"].(map[string]any); props["message"] == nil {
		t.Errorf("everything__echo's parameters: %v", echo)
	}
	if _, info := g.do("GET", "/info", ""); info["tools"].(float64) < 10 {
		t.Errorf("GET /info counts the servers' tools too: %v", info)
	}

	stream := openSSE(t, g.url, "Authorization", g.auth())
	_, hello := stream.next()
	stream.next()
	id := hello["clientId"].(string)
	if status, out := g.do("POST", "/messages", `{"clientId":"`+id+`","tool":"everything__echo","parameters":{"message":"from the web"}}`); status != 202 {
		t.Fatalf("POST /messages: %d %v", status, out)
	}
	if name, res := stream.next(); name != "tool_result" || res["success"] != true || !strings.Contains(jsonText(res["result"]), "Echo: from the web") {
		t.Fatalf("tool_result: %q %v", name, res)
	}
	// A tool that fails comes back as a failed result, with its message.
	g.do("POST", "/messages", `{"clientId":"`+id+`","tool":"everything__get-sum","parameters":{"a":"one"}}`)
	if _, res := stream.next(); res["success"] != false || res["error"].(map[string]any)["error_category"] != "tool_error" {
		t.Fatalf("failed tool_result: %v", res)
	}
}

// TestSpec002MessagesEnforceTheCallersPolicy: spec 002's clients are
// agents, so every operation POST /messages can name is allowed or denied
// as it declares for agents. The probes carry an unknown field: an admitted
// call fails validation and runs nothing, a refused one fails before it.
func TestSpec002MessagesEnforceTheCallersPolicy(t *testing.T) {
	g := start(t, gateway.Options{NoToken: true})
	stream := openSSE(t, g.url)
	_, connected := stream.next()
	stream.next()
	id := connected["clientId"].(string)
	want := map[string]bool{} // tool → admitted
	for _, o := range registry.All() {
		m := o.Info()
		if m.CLIOnly || m.Stream {
			continue
		}
		want[m.Name] = m.Callers == op.Agents || m.Callers == op.Anyone
		body := `{"clientId":"` + id + `","tool":"` + m.Name + `","requestId":"` + m.Name + `","parameters":{"__probe":1}}`
		if status, out := g.do("POST", "/messages", body); status != 202 {
			t.Fatalf("POST /messages %s: %d %v", m.Name, status, out)
		}
	}
	for range want {
		_, res := stream.next()
		tool, _ := res["requestId"].(string)
		e, _ := res["error"].(map[string]any)
		switch {
		case res["success"] != false || e == nil:
			t.Errorf("%s: a probe with an unknown field succeeded: %v", tool, res)
		case want[tool] && (e["error_category"] != "invalid_input" || !strings.Contains(e["error"].(string), "__probe")):
			t.Errorf("%s: open to agents, so the call must reach validation: %v", tool, e)
		case !want[tool] && (e["error_category"] != "denied" || e["exit_code"] != 5.0 || !strings.Contains(e["error"].(string), "an agent may not call")):
			t.Errorf("%s: the person's, so an agent must be denied: %v", tool, e)
		}
	}
}
