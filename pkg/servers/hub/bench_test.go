package hub

import (
	"context"
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/npmtest"
	"lmtool.dev/lm/pkg/servers"
)

// BenchmarkToolCall is a trivial tools/call (server-everything's echo)
// through the hub, per server and aggregated, from an mcp-go client over
// loopback HTTP: the hot path to profile (go test -bench ToolCall
// -cpuprofile). The latency target is checked by `make bench`, against
// references run in the same session.
func BenchmarkToolCall(b *testing.B) {
	everything := npmtest.Skip(b, "mcp-server-everything")
	h, url := startHub(b, `{"mcpServers": {"everything": {"command": "`+everything+`", "auto_start": true}}}`)
	if s := settled(b, h, "everything"); s.State != servers.Running {
		b.Fatalf("everything: %+v", s)
	}
	for _, path := range []struct{ name, endpoint, tool string }{
		{"aggregated", "/mcp", "everything__echo"},
		{"per-server", "/mcp/everything", "echo"},
	} {
		b.Run(path.name, func(b *testing.B) {
			cl := connect(b, url+path.endpoint)
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
