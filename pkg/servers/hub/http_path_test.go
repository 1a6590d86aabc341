package hub

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/servers"
)

// POST /mcp/{server}/{method}: one call for HTTP clients that do not speak
// MCP's handshake, the body its params or a whole JSON-RPC request.
func TestPathFormCallsAServer(t *testing.T) {
	h, base := startHub(t, `{"mcpServers": {"a": {`+childServer(t, "plain", nil)+`, "auto_start": true}}}`)
	awaitState(t, h, "a", servers.Running, 20*time.Second)
	post := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s %s: %s answered %s: %s", method, path, res.Status, ct, data)
		}
		var out map[string]any
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
		return res.StatusCode, out
	}
	for _, body := range []string{
		`{"name": "echo", "arguments": {"message": "by path"}}`,
		`{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "by path"}}}`,
	} {
		code, out := post("POST", "/mcp/a/tools/call", body)
		text, _ := json.Marshal(out["result"])
		if code != 200 || !strings.Contains(string(text), "Echo: by path") {
			t.Fatalf("tools/call by path with %s: %d %v", body, code, out)
		}
	}
	if code, out := post("POST", "/mcp/a/tools/list", ``); code != 200 || !strings.Contains(func() string { b, _ := json.Marshal(out); return string(b) }(), `"echo"`) {
		t.Fatalf("tools/list by path: %d %v", code, out)
	}
	if code, out := post("POST", "/mcp/a/tools/call", `{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}`); code != 400 || out["error"] == nil {
		t.Fatalf("a body whose method is not the path's: %d %v", code, out)
	}
	if code, out := post("GET", "/mcp/a/tools/call", ``); code != 405 || !strings.Contains(out["error"].(map[string]any)["message"].(string), "POST") {
		t.Fatalf("GET on the path form: %d %v", code, out)
	}
	if code, _ := post("POST", "/mcp/nope/tools/call", `{}`); code != 404 {
		t.Fatalf("an unknown server by path: %d", code)
	}
}
