package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/gateway"
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
	c, err := client.NewSSEMCPClient(g.url + "/mcp/sse")
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

// rpc posts one JSON-RPC message to /mcp with the given extra headers.
func rpc(t *testing.T, g *gw, body string, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", g.url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func TestMCPRejectsForeignHostAndOrigin(t *testing.T) {
	g := start(t, gateway.Options{})
	for _, h := range [][]string{{"Host", "attacker.example"}, {"Origin", "http://attacker.example"}} {
		if res := rpc(t, g, initialize, h...); res.StatusCode < 400 || res.StatusCode >= 500 {
			t.Errorf("%s %s: status %d, want 4xx", h[0], h[1], res.StatusCode)
		}
	}
	if res := rpc(t, g, initialize, "Origin", g.url); res.StatusCode != 200 {
		t.Errorf("own origin: status %d", res.StatusCode)
	}
}

func TestMCPStatefulSessionEndsWithDelete(t *testing.T) {
	g := start(t, gateway.Options{Stateful: true})
	res := rpc(t, g, initialize)
	session := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != 200 || session == "" {
		t.Fatalf("initialize: status %d, session %q", res.StatusCode, session)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if res := rpc(t, g, list, "Mcp-Session-Id", session); res.StatusCode != 200 {
		t.Fatalf("tools/list in the session: %d", res.StatusCode)
	}
	req, _ := http.NewRequest("DELETE", g.url+"/mcp", nil)
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
	if res := rpc(t, g, list, "Mcp-Session-Id", session); res.StatusCode != 404 {
		t.Fatalf("request in a deleted session: %d, want 404", res.StatusCode)
	}
}
