package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/gateway"
	"lmtool.dev/lm/pkg/mcpx"
	"lmtool.dev/lm/pkg/op"
)

// The gateway's /mcp callers work beneath the gateway's roots (its --root,
// else where it started): a file outside is neither read nor named.
func TestMCPCallersWorkBeneathTheGatewaysRoots(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(root, "in.txt"), []byte("INSIDE\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("TOPSECRET\n"), 0o644)
	g := start(t, gateway.Options{Env: op.Env{Roots: []string{root}}})
	c, err := client.NewStreamableHttpClient(g.url+"/mcp", transport.WithHTTPHeaders(g.agentHeaders("confined")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	extract := func(args map[string]any) (string, bool) {
		args["task_type"], args["patterns"] = "pattern_match", []string{"."}
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "local_extract", Arguments: args}})
		if err != nil {
			t.Fatal(err)
		}
		text := res.Content[0].(mcp.TextContent).Text
		return text, res.IsError
	}
	if text, isErr := extract(map[string]any{"files": []string{"in.txt"}}); isErr || !strings.Contains(text, "INSIDE") {
		t.Errorf("inside: %s", text)
	}
	for _, args := range []map[string]any{
		{"files": []string{filepath.Join(outside, "secret.txt")}},
		{"files": []string{"secret.txt"}, "root": outside},
		{"files": []string{filepath.Join(outside, "secret.txt")}, "allow_outside_root": true},
	} {
		if text, isErr := extract(args); !isErr || strings.Contains(text, "TOPSECRET") {
			t.Errorf("%v: %s", args, text)
		}
	}
}

// rootsOf answers roots/list with fixed directories.
type rootsOf []string

func (r rootsOf) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	var roots []mcp.Root
	for _, dir := range r {
		roots = append(roots, mcp.Root{URI: "file://" + dir, Name: filepath.Base(dir)})
	}
	return &mcp.ListRootsResult{Roots: roots}, nil
}

// A client of the gateway is whoever holds a token, not the person's own
// host: the roots it declares can only narrow the gateway's, never widen
// them to the file system (where $LM_HOME holds the person's token).
func TestGatewayClientsCannotWidenTheirRoots(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(root, "in.txt"), []byte("INSIDE\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("TOPSECRET\n"), 0o644)
	g := start(t, gateway.Options{Env: op.Env{Roots: []string{root}}, Sessions: mcpx.Sessions{Stateful: true}})
	tr, err := transport.NewStreamableHTTP(g.url+"/mcp", transport.WithHTTPHeaders(g.agentHeaders("wide")), transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithRootsHandler(rootsOf{"/", outside}))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "local_extract",
		Arguments: map[string]any{"task_type": "pattern_match", "patterns": []string{"."}, "files": []string{filepath.Join(outside, "secret.txt")}}}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(mcp.TextContent).Text; !res.IsError || strings.Contains(text, "TOPSECRET") {
		t.Fatalf("a client that declared / as its root read outside the gateway's: %s", text)
	}
}
