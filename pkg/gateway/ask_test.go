package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"lmtool.dev/lm/pkg/gateway"
	"lmtool.dev/lm/pkg/npmtest"
	"lmtool.dev/lm/pkg/servers"
)

// fakeModel is a model on loopback speaking Ollama's /api/chat: each
// request gets the next scripted reply; the messages it was sent are kept.
type fakeModel struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []string
	messages [][]string // per request, "role: content"
}

func newFakeModel(t *testing.T, replies ...string) *fakeModel {
	t.Helper()
	m := &fakeModel{replies: replies}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		m.mu.Lock()
		defer m.mu.Unlock()
		var msgs []string
		for _, msg := range req.Messages {
			msgs = append(msgs, msg.Role+": "+msg.Content)
		}
		m.messages = append(m.messages, msgs)
		if len(m.replies) == 0 {
			t.Errorf("model request %d after the script ended", len(m.messages))
			http.Error(w, `{"error":"the script ended"}`, http.StatusBadRequest)
			return
		}
		reply := m.replies[0]
		m.replies = m.replies[1:]
		json.NewEncoder(w).Encode(map[string]any{"message": map[string]any{"role": "assistant", "content": reply}, "done": true})
	}))
	t.Cleanup(m.Close)
	return m
}

// lastRequest is what the model was sent last, one "role: content" a line.
func (m *fakeModel) lastRequest() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.messages) == 0 {
		return ""
	}
	return strings.Join(m.messages[len(m.messages)-1], "\n")
}

// askHome is an LM_HOME with server-everything configured as "everything",
// a server that cannot start as "broken", and, when m is not nil, the
// model m.
func askHome(t *testing.T, m *fakeModel) string {
	t.Helper()
	everything := npmtest.Skip(t, "mcp-server-everything")
	home := t.TempDir()
	cfg := `{"mcpServers": {
		"everything": {"command": "` + everything + `", "description": "The MCP reference server"},
		"broken": {"command": "` + filepath.Join(home, "no-such-server") + `", "description": "A server whose program is gone"}}}`
	if err := os.WriteFile(servers.Path(home), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if m != nil {
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(fmt.Sprintf("[model]\nmodel = \"tiny\"\nurl = %q\n", m.URL)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

func TestAskRoutes(t *testing.T) {
	m := newFakeModel(t,
		`{"action":"call","tool":"get-sum","arguments":{"a":40,"b":1},"reason":"the tool adds numbers"}`,
		`{"action":"call","tool":"echo","arguments":{"message":"42"},"reason":"say the sum"}`,
	)
	g := startIn(t, askHome(t, m), gateway.Options{})

	code, body := g.do("GET", "/api/servers", "")
	if code != 200 || !strings.Contains(jsonText(body), `"name":"everything"`) {
		t.Fatalf("GET /api/servers = %d %v", code, body)
	}
	code, body = g.do("GET", "/api/servers/everything/tools", "")
	if code != 200 || !strings.Contains(jsonText(body), `"name":"get-sum"`) {
		t.Fatalf("GET /api/servers/everything/tools = %d %v", code, body)
	}
	code, body = g.do("GET", "/api/servers/broken/tools", "")
	if code != http.StatusServiceUnavailable || !strings.Contains(body["error"].(string), "cannot connect to broken") {
		t.Errorf("tools of a server that cannot start = %d %v", code, body)
	}
	code, body = g.do("GET", "/api/servers/nothing/tools", "")
	if code != http.StatusNotFound {
		t.Errorf("tools of an unknown server = %d %v", code, body)
	}

	// The proposal: nothing runs.
	code, body = g.do("POST", "/api/ask", `{"server":"everything","request":"add 40 and 2","dry_run":true}`)
	if code != 200 || body["stopped"] != "dry_run" {
		t.Fatalf("POST /api/ask = %d %v", code, body)
	}
	step := body["steps"].([]any)[0].(map[string]any)
	if p := step["proposal"].(map[string]any); p["tool"] != "get-sum" || p["reason"] != "the tool adds numbers" || step["approval"] != "proposed" {
		t.Errorf("proposal %v", step)
	}
	if code, body := g.do("POST", "/api/ask", `{"server":"everything","request":"add 40 and 2"}`); code != http.StatusForbidden ||
		!strings.Contains(body["suggestion"].(string), "dry_run") {
		t.Errorf("ask without dry_run = %d %v", code, body)
	}

	// The person edits the arguments and approves: the call runs, recorded
	// as approved. Invalid arguments are refused before anything runs.
	code, body = g.do("POST", "/api/call", `{"server":"everything","tool":"get-sum","arguments":{"a":40,"b":"two"}}`)
	if code != http.StatusUnprocessableEntity || !strings.Contains(body["error"].(string), `"b" must be number`) {
		t.Errorf("call with invalid arguments = %d %v", code, body)
	}
	code, body = g.do("POST", "/api/call", `{"server":"everything","tool":"get-sum","arguments":{"a":40,"b":2}}`)
	if code != 200 || !strings.Contains(jsonText(body["result"]), "The sum of 40 and 2 is 42.") || body["history_id"] == "" {
		t.Fatalf("POST /api/call = %d %v", code, body)
	}
	code, body = g.do("POST", "/api/call", `{"server":"everything","tool":"gzip-file-as-resource","arguments":{"name":"x","data":"ftp://x"}}`)
	if code != http.StatusBadGateway || body["error_category"] != "tool_error" {
		t.Errorf("a tool that reports an error = %d %v", code, body)
	}
	// Only configured servers and URLs: never a program from the page.
	code, body = g.do("POST", "/api/call", `{"command":["/bin/sh","-c","touch pwned"],"tool":"echo","arguments":{"message":"x"}}`)
	if code != http.StatusForbidden || !strings.Contains(body["error"].(string), "command line") {
		t.Errorf("a stdio command from the page = %d %v", code, body)
	}

	// The follow-up carries the earlier turn to the model.
	followUp := `{"server":"everything","request":"now echo it","dry_run":true,"previous":[{"request":"add 40 and 2","steps":[
		{"proposal":{"action":"call","tool":"get-sum","arguments":{"a":40,"b":1}},"approval":"edited","arguments":{"a":40,"b":2},"result":"The sum of 40 and 2 is 42."}]}]}`
	if code, body := g.do("POST", "/api/ask", followUp); code != 200 {
		t.Fatalf("follow-up = %d %v", code, body)
	}
	if sent := m.lastRequest(); !strings.Contains(sent, `user: The result of get-sum: "The sum of 40 and 2 is 42."`) || !strings.HasSuffix(sent, "user: now echo it") {
		t.Errorf("the follow-up sent the model:\n%s", sent)
	}

	code, body = g.do("GET", "/api/history?target=everything", "")
	items, _ := body["items"].([]any)
	if code != 200 || len(items) != 2 {
		t.Fatalf("GET /api/history = %d %v", code, body)
	}
	for _, it := range items {
		if r := it.(map[string]any); r["approval"] != "approved" {
			t.Errorf("a call approved on the page is recorded as %v", r["approval"])
		}
	}

	code, body = g.do("GET", "/openapi.json", "")
	paths, _ := body["paths"].(map[string]any)
	for _, p := range []string{"/api/servers", "/api/servers/{server}/tools", "/api/ask", "/api/call", "/api/history"} {
		if paths[p] == nil {
			t.Errorf("/openapi.json does not describe %s", p)
		}
	}
}

func TestAskRouteWithoutAModel(t *testing.T) {
	g := startIn(t, askHome(t, nil), gateway.Options{})
	code, body := g.do("POST", "/api/ask", `{"server":"everything","request":"add 40 and 2","dry_run":true}`)
	if code != http.StatusServiceUnavailable || body["error_category"] != "model_unavailable" ||
		!strings.Contains(body["suggestion"].(string), "LM_MODEL") || !strings.Contains(body["suggestion"].(string), "[model]") {
		t.Errorf("ask without a model = %d %v", code, body)
	}
}

func jsonText(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}
