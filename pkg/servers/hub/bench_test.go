package hub

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"lmtool.dev/lm/pkg/npmtest"
	"lmtool.dev/lm/pkg/servers"
)

// BenchmarkToolCall is a trivial tools/call (server-everything's echo)
// through the hub, per server and aggregated, from an mcp-go client over
// loopback HTTP: the hot path to profile (go test -bench ToolCall
// -cpuprofile). "reference" is the least any proxy does, in the same
// process: a bare mcp-go server forwarding to its own session with a
// second child, so the hub's own cost is the difference. The latency
// target is checked by `make bench`, against references run in the same
// session.
func BenchmarkToolCall(b *testing.B) {
	everything := npmtest.Skip(b, "mcp-server-everything")
	h, url := startHub(b, `{"mcpServers": {"everything": {"command": "`+everything+`", "auto_start": true}}}`)
	if s := settled(b, h, "everything"); s.State != servers.Running {
		b.Fatalf("everything: %+v", s)
	}
	ref := referenceProxy(b, everything)
	for _, path := range []struct{ name, endpoint, tool string }{
		{"aggregated", url + "/mcp", "everything__echo"},
		{"per-server", url + "/mcp/everything", "echo"},
		{"reference", ref, "echo"},
	} {
		b.Run(path.name, func(b *testing.B) {
			cl := connect(b, path.endpoint)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n++
				req := mcp.CallToolRequest{}
				req.Params.Name, req.Params.Arguments = path.tool, map[string]any{"message": fmt.Sprint("m", n)}
				res, err := cl.CallTool(context.Background(), req)
				if err != nil || res.IsError {
					b.Fatalf("%s: %v %+v", path.tool, err, res)
				}
			}
		})
	}
}

// referenceProxy serves /mcp with one tool, echo, forwarded to a child of
// its own over one mcp-go client session, and returns its URL.
func referenceProxy(b *testing.B, command string) string {
	cl, err := client.NewStdioMCPClient(command, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cl.Close() })
	if _, err := cl.Initialize(context.Background(), mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		ClientInfo: mcp.Implementation{Name: "bench", Version: "1"}}}); err != nil {
		b.Fatal(err)
	}
	s := server.NewMCPServer("reference", "1", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("message")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return cl.CallTool(ctx, req)
	})
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s, server.WithStateLess(true)))
	b.Cleanup(srv.Close)
	return srv.URL
}

// BenchmarkPassthrough is a tools/call of a Go stdio child's echo from a
// bare HTTP client, per server and aggregated: the passthrough's path, as
// lmbench's hop section measures it against the peers.
func BenchmarkPassthrough(b *testing.B) {
	h, url := startHub(b, `{"mcpServers": {"plain": {`+childServer(b, "plain", nil)+`, "auto_start": true}}}`)
	if s := settled(b, h, "plain"); s.State != servers.Running {
		b.Fatalf("plain: %+v", s)
	}
	for _, path := range []struct{ name, endpoint, tool string }{
		{"per-server", url + "/mcp/plain", "echo"},
		{"aggregated", url + "/mcp", "plain__echo"},
	} {
		b.Run(path.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n++
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"message":"m%d"}}}`, n, path.tool, n)
				req, err := http.NewRequest(http.MethodPost, path.endpoint, strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				data, err := io.ReadAll(res.Body)
				res.Body.Close()
				if err != nil || !strings.Contains(string(data), fmt.Sprintf("Echo: m%d", n)) {
					b.Fatalf("%s: %v %s", path.tool, err, data)
				}
			}
		})
	}
}
