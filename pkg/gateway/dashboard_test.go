package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/gateway"
	"lmtool.dev/lm/pkg/npmtest"
	"lmtool.dev/lm/pkg/servers"
)

// mcpClient is an initialized MCP client session with the endpoint at url.
func mcpClient(t *testing.T, url string, header map[string]string) *client.Client {
	t.Helper()
	cl, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(header))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	if _, err := cl.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "dashboard-test", Version: "1"},
	}}); err != nil {
		t.Fatalf("initialize %s: %v", url, err)
	}
	return cl
}

// serverState is the server's state as the gateway's API reports it.
func (g *gw) serverState(name string) string {
	g.t.Helper()
	code, body := g.do("GET", "/servers/"+name, "")
	if code != 200 {
		g.t.Fatalf("GET /servers/%s = %d %v", name, code, body)
	}
	return body["state"].(string)
}

// click clicks the element once it is visible and enabled.
func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	waitText(t, ctx, "body", func(string) bool {
		ok, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const e = document.querySelector(`+quote(sel)+`); return !!e && !e.disabled && e.offsetParent !== null })()`))
		return ok
	}, sel+" enabled")
	if err := chromedp.Do(ctx, chromedp.Click(sel)); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
}

func TestServersDashboardInBrowser(t *testing.T) {
	everything := npmtest.Skip(t, "mcp-server-everything")
	memory := npmtest.Skip(t, "mcp-server-memory")
	ctx := browser(t)
	home := t.TempDir()
	cfg := `{"mcpServers": {
		"everything": {"command": "` + everything + `", "auto_start": true, "description": "The MCP reference server: echo, sums, resources",
			"cache_tools": {"echo": ["message"]}},
		"memory": {"command": "` + memory + `", "description": "A knowledge graph that persists across sessions",
			"env": {"MEMORY_FILE_PATH": "` + filepath.Join(home, "memory.jsonl") + `"}}}}`
	if err := os.WriteFile(servers.Path(home), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startIn(t, home, gateway.Options{})

	if err := chromedp.Do(ctx, chromedp.Navigate(g.page()), showView("#servers"), chromedp.WaitVisible("#servers")); err != nil {
		t.Fatal(err)
	}
	if title, _ := chromedp.Run(ctx, chromedp.Title()); title != "lm desk · servers" {
		t.Errorf("title %q", title)
	}
	if shown, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("view-desk").getClientRects().length > 0`)); shown {
		t.Fatal("the desk shows beside the servers")
	}
	everythingTag := `#servers li[data-name="everything"] .tag`
	memoryTag := `#servers li[data-name="memory"] .tag`
	waitText(t, ctx, everythingTag, contains("running"), "auto-started server")
	waitText(t, ctx, memoryTag, contains("stopped"), "server without auto_start")
	waitText(t, ctx, "#servers-count", contains("1/2"), "tab count")
	waitText(t, ctx, `#servers li[data-name="everything"]`, contains("The MCP reference server"), "description")

	// Start from the page: the child really runs.
	click(t, ctx, `#servers li[data-name="memory"] button[data-action="start"]`)
	waitText(t, ctx, memoryTag, contains("running"), "started from the page")
	if s := g.serverState("memory"); s != servers.Running {
		t.Fatalf("memory after Start on the page: %s", s)
	}
	waitText(t, ctx, "#servers-count", contains("2/2"), "tab count after start")

	// Calls through the gateway appear in the activity log as they happen;
	// the repeated one is served from the cache.
	cl := mcpClient(t, g.url+"/mcp/everything", g.authHeaders())
	for range 2 {
		if _, err := cl.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "seen on the dashboard"}}}); err != nil {
			t.Fatal(err)
		}
	}
	waitText(t, ctx, "#activity li:first-child", contains("cached"), "live activity: the cache hit")
	waitText(t, ctx, "#activity li:nth-child(2)", contains("tools/call echo"), "live activity: the call")
	waitText(t, ctx, "#activity li:nth-child(2) .call-server", contains("everything"), "live activity: the server")
	waitText(t, ctx, "#cache-stats", contains("1 of"), "cache entries")
	waitText(t, ctx, "#cache-stats", contains("50 %"), "hit ratio")

	// A tool that fails is logged with its outcome and what it said.
	if r, err := cl.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "get-sum", Arguments: map[string]any{"a": "one"}}}); err != nil || !r.IsError {
		t.Fatalf("get-sum with a string: %+v %v", r, err)
	}
	waitText(t, ctx, "#activity li:first-child", contains("error"), "live activity: the failed call")
	waitText(t, ctx, "#activity li:first-child .call-error", contains("expected number"), "the failed call's message")

	// Clear the cache from the page.
	click(t, ctx, "#cache-clear")
	waitText(t, ctx, "#cache-stats", contains("0 of"), "cache cleared on the page")
	if code, body := g.do("GET", "/cache", ""); code != 200 || body["entries"] != 0.0 {
		t.Fatalf("GET /cache after clearing = %d %v", code, body)
	}

	shot(t, ctx, "servers-light")
	checkContrast(t, ctx, "servers, light")
	checkFocus(t, ctx, "servers, light")

	// Stop from the page: the process goes, the state says so.
	click(t, ctx, `#servers li[data-name="everything"] button[data-action="stop"]`)
	waitText(t, ctx, everythingTag, contains("stopped"), "stopped from the page")
	if s := g.serverState("everything"); s != servers.Stopped {
		t.Fatalf("everything after Stop on the page: %s", s)
	}
	waitText(t, ctx, "#servers-count", contains("1/2"), "tab count after stop")
	// Focus stays on the card, on a button that still does something.
	if focused, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.dataset.action || ""`)); focused != "start" && focused != "restart" {
		t.Errorf("after Stop the focus is on %q", focused)
	}

	// Keyboard: d and s switch views, and the hash follows.
	if err := chromedp.Do(ctx, chromedp.Click("#servers-title"), chromedp.KeyEvent("d")); err != nil {
		t.Fatal(err)
	}
	visible := func(id string) bool {
		v, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById(`+quote(id)+`).getClientRects().length > 0`))
		return v
	}
	if !visible("view-desk") || visible("view-servers") {
		t.Fatal("d did not show the desk")
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent("s")); err != nil {
		t.Fatal(err)
	}
	hash, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash`))
	if !visible("view-servers") || hash != "#servers" {
		t.Fatalf("s did not show the servers (hash %q)", hash)
	}
	current, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('.tab[aria-current="page"]').id`))
	if current != "tab-servers" {
		t.Errorf("current tab %q", current)
	}

	if err := chromedp.Do(ctx, chromedp.Click("#theme-toggle")); err != nil {
		t.Fatal(err)
	}
	shot(t, ctx, "servers-dark")
	checkContrast(t, ctx, "servers, dark")
	checkFocus(t, ctx, "servers, dark")

	onPhone(t, ctx, "the dashboard")
	shot(t, ctx, "servers-phone-dark")
	checkContrast(t, ctx, "servers, phone, dark")
	click(t, ctx, `#servers li[data-name="everything"] button[data-action="start"]`)
	waitText(t, ctx, everythingTag, contains("running"), "started again at phone width")
	if err := chromedp.Do(ctx, chromedp.Click("#theme-toggle")); err != nil {
		t.Fatal(err)
	}
	shot(t, ctx, "servers-phone-light")
	checkContrast(t, ctx, "servers, phone, light")
}
