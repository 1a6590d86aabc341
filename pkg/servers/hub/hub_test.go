package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"lmtool.dev/lm/pkg/mcpx"
	"lmtool.dev/lm/pkg/npmtest"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers"
	"lmtool.dev/lm/pkg/servers/keyring"
	"lmtool.dev/lm/pkg/servers/keyring/keyringtest"
	"lmtool.dev/lm/pkg/testkit"
)

// startHub writes servers.json, starts a hub behind a real HTTP server with
// the aggregated /mcp, and stops both (and every child) at the end.
func startHub(t testing.TB, cfg string) (*Hub, string) {
	t.Helper()
	return startHubWith(t, cfg, io.Discard, false)
}

// startHubWith is startHub with the hub's log written to w, and /mcp
// keeping sessions when stateful (so it can notify its clients).
func startHubWith(t testing.TB, cfg string, w io.Writer, stateful bool) (*Hub, string) {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(servers.Path(home), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	agg := server.NewMCPServer("lm", "test", server.WithToolCapabilities(true), server.WithPromptCapabilities(true), server.WithResourceCapabilities(false, true))
	agg.AddTool(mcp.NewTool("queue_add"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("lm's own"), nil
	})
	h, err := New(Options{Home: home, Environ: os.Environ(), Aggregate: agg, Log: slog.New(slog.NewTextHandler(w, nil))})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	// As the gateway mounts them.
	sessions := mcpx.Sessions{Stateful: stateful}
	mux.Handle("/mcp", h.Passthrough(sessions, sessions.Server(agg)))
	mux.Handle("/", h.Handler(sessions))
	srv := httptest.NewServer(mux)
	h.Start()
	t.Cleanup(func() {
		srv.Close()
		h.Close()
	})
	return h, srv.URL
}

func connect(t testing.TB, url string, opts ...transport.StreamableHTTPCOption) *client.Client {
	t.Helper()
	cl, err := client.NewStreamableHttpClient(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		ClientInfo: mcp.Implementation{Name: "test", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// settled waits for a server to leave the transitional states.
func settled(t testing.TB, h *Hub, name string) servers.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h.child(name).waitSettled(ctx)
	return h.child(name).status()
}

func call(t *testing.T, cl *client.Client, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	return cl.CallTool(ctx, req)
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestAggregatesNamespacedToolsAndProxiesCalls(t *testing.T) {
	everything, memory := npmtest.Skip(t, "mcp-server-everything"), npmtest.Skip(t, "mcp-server-memory")
	h, url := startHub(t, `{"mcpServers": {
		"everything": {"command": "`+everything+`", "auto_start": true, "tools": {"deny": ["get-env"]}},
		"memory": {"command": "`+memory+`", "auto_start": true}}}`)
	for _, n := range []string{"everything", "memory"} {
		if s := settled(t, h, n); s.State != servers.Running {
			t.Fatalf("%s: %+v", n, s)
		}
	}
	cl := connect(t, url+"/mcp")
	ctx := context.Background()
	tools, err := cl.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
		if len(tool.Name) > 64 || strings.Trim(tool.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			t.Errorf("tool name %q is not a valid namespaced name", tool.Name)
		}
	}
	for _, want := range []string{"queue_add", "everything__echo", "everything__get-sum", "memory__read_graph", "memory__create_entities"} {
		if !names[want] {
			t.Errorf("/mcp lacks %s; has %v", want, names)
		}
	}
	if names["everything__get-env"] {
		t.Error("a denied tool is exposed")
	}
	prompts, err := cl.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil || len(prompts.Prompts) == 0 || !strings.HasPrefix(prompts.Prompts[0].Name, "everything__") {
		t.Fatalf("prompts: %+v %v", prompts, err)
	}

	r, err := call(t, cl, "everything__echo", map[string]any{"message": "through the hub"})
	if err != nil || text(r) != "Echo: through the hub" {
		t.Fatalf("echo via /mcp: %+v %v", r, err)
	}
	own := connect(t, url+"/mcp/memory")
	if _, err := call(t, own, "create_entities", map[string]any{"entities": []any{map[string]any{"name": "lm", "entityType": "tool", "observations": []any{"proxied"}}}}); err != nil {
		t.Fatal(err)
	}
	r, err = call(t, cl, "memory__read_graph", map[string]any{})
	if err != nil || !strings.Contains(text(r), "proxied") {
		t.Fatalf("one session per child: the entity made through /mcp/memory must be visible through /mcp: %+v %v", r, err)
	}

	// An unknown server is a 404 JSON-RPC error.
	resp, err := http.Post(url+"/mcp/nosuch", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	var rpc struct {
		Error struct{ Message string } `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&rpc)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(rpc.Error.Message, "unknown server") {
		t.Fatalf("unknown server: %d %+v", resp.StatusCode, rpc)
	}
}

func TestKilledChildIsRestartedAndCallsWork(t *testing.T) {
	everything := npmtest.Skip(t, "mcp-server-everything")
	h, url := startHub(t, `{"mcpServers": {"everything": {"command": "`+everything+`", "auto_start": true, "restart_delay": 0.05}}}`)
	before := settled(t, h, "everything")
	if before.State != servers.Running || before.Pid == 0 {
		t.Fatalf("%+v", before)
	}
	if err := syscall.Kill(before.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var after servers.Status
	for i := 0; i < 600; i++ { // the restart takes a second or two; bounded at a minute
		after = h.child("everything").status()
		if after.State == servers.Running && after.Pid != before.Pid {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if after.State != servers.Running || after.RestartCount != 1 || !strings.Contains(after.LastExit, "SIGKILL") {
		t.Fatalf("after SIGKILL: %+v", after)
	}
	cl := connect(t, url+"/mcp/everything")
	if r, err := call(t, cl, "echo", map[string]any{"message": "again"}); err != nil || text(r) != "Echo: again" {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestCrashLoopEndsFailedWithStderr(t *testing.T) {
	h, _ := startHub(t, `{"mcpServers": {"broken": {"command": "sh", "args": ["-c", "echo missing API key >&2; exit 3"],
		"auto_start": true, "max_restarts": 2, "restart_delay": 0.01}}}`)
	var s servers.Status
	for i := 0; i < 300 && s.State != servers.Failed; i++ {
		s = settled(t, h, "broken")
		time.Sleep(10 * time.Millisecond)
	}
	if s.State != servers.Failed || s.RestartCount != 2 || !strings.Contains(s.LastError, "crash loop") ||
		!strings.Contains(s.LastError, "missing API key") || !strings.Contains(s.LastError, "before the MCP handshake") || s.LastExit != "exit status 3" {
		t.Fatalf("%+v", s)
	}
}

func TestBreakerOpensAndRecovers(t *testing.T) {
	everything := npmtest.Skip(t, "mcp-server-everything")
	// A server that stops answering (a call outlives its timeout) is what
	// the breaker guards against; a dead one has left /mcp altogether.
	h, url := startHub(t, `{"settings": {"cb_failure_threshold": 2, "cb_recovery_timeout": 0.5},
		"mcpServers": {"everything": {"command": "`+everything+`", "auto_start": true, "timeout": 0.2}}}`)
	settled(t, h, "everything")
	cl := connect(t, url+"/mcp")
	slow := map[string]any{"duration": 5, "steps": 1}
	for i := 0; i < 2; i++ {
		// The model reads why: an isError result with lm's envelope.
		r, err := call(t, cl, "everything__trigger-long-running-operation", slow)
		if err != nil || !r.IsError || !strings.Contains(text(r), "did not answer tools/call within 200ms") || !strings.Contains(text(r), `"exit_code":7`) {
			t.Fatalf("call %d to a server that does not answer: %+v %v", i, r, err)
		}
	}
	_, err := call(t, cl, "everything__echo", map[string]any{"message": "x"})
	if err == nil || !strings.Contains(err.Error(), "circuit breaker open") || !strings.Contains(err.Error(), "will be retried at") {
		t.Fatalf("an OPEN breaker must fail fast naming the server and the retry time: %v", err)
	}
	if b := h.child("everything").status().Breaker; b.State != servers.BreakerOpen || b.RetryAt == nil {
		t.Fatalf("breaker %+v", b)
	}
	for i := 0; i < 100 && h.child("everything").status().Breaker.State != servers.BreakerHalfOpen; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if r, err := call(t, cl, "everything__echo", map[string]any{"message": "probe"}); err != nil || text(r) != "Echo: probe" {
		t.Fatalf("the HALF_OPEN probe: %+v %v", r, err)
	}
	if b := h.child("everything").status().Breaker; b.State != servers.BreakerClosed || b.Failures != 0 {
		t.Fatalf("a good probe must close the breaker: %+v", b)
	}
}

func TestCacheHitsAndInvalidation(t *testing.T) {
	everything := npmtest.Skip(t, "mcp-server-everything")
	h, url := startHub(t, `{"mcpServers": {"everything": {"command": "`+everything+`", "auto_start": true, "cache_tools": {"get-sum": ["a", "b"]}, "cache_resources": ["demo://*/*/*/*"]}}}`)
	settled(t, h, "everything")
	cl := connect(t, url+"/mcp")
	for i := 0; i < 2; i++ {
		if r, err := call(t, cl, "everything__get-sum", map[string]any{"b": 2, "a": 1}); err != nil || !strings.Contains(text(r), "3") {
			t.Fatalf("%+v %v", r, err)
		}
	}
	call(t, cl, "everything__echo", map[string]any{"message": "never cached"})
	call(t, cl, "everything__echo", map[string]any{"message": "never cached"})
	if st := h.CacheStats(); st.Hits != 1 || st.Entries != 1 {
		t.Fatalf("one hit for the repeated get-sum, nothing for echo: %+v", st)
	}
	acts, _ := h.Activity()
	if acts[1].Outcome != "cached" || acts[0].Outcome != "ok" {
		t.Fatalf("activity %+v", acts)
	}
	// The child announcing a new tool list invalidates cached calls.
	h.upstreamNotification(h.child("everything"), mcp.JSONRPCNotification{Notification: mcp.Notification{Method: mcp.MethodNotificationToolsListChanged}})
	if st := h.CacheStats(); st.Entries != 0 {
		t.Fatalf("tools/list_changed must invalidate: %+v", st)
	}
	res, err := cl.ListResources(context.Background(), mcp.ListResourcesRequest{})
	if err != nil || len(res.Resources) == 0 {
		t.Fatalf("%+v %v", res, err)
	}
	uri := res.Resources[0].URI
	for i := 0; i < 2; i++ {
		if _, err := cl.ReadResource(context.Background(), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}}); err != nil {
			t.Fatal(err)
		}
	}
	if st := h.CacheStats(); st.Hits != 2 {
		t.Fatalf("a repeated resources/read must hit: %+v", st)
	}
	// The child names the resource by its own URI.
	_, upstream, err := SplitURI(uri)
	if err != nil {
		t.Fatal(err)
	}
	h.upstreamNotification(h.child("everything"), mcp.JSONRPCNotification{Notification: mcp.Notification{Method: mcp.MethodNotificationResourceUpdated,
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"uri": upstream}}}})
	if st := h.CacheStats(); st.Entries != 0 {
		t.Fatalf("resources/updated must invalidate the read: %+v", st)
	}
}

func TestSecretsReachTheChildAndNothingElse(t *testing.T) {
	const secret = "sk-live-5ecr3t-value"
	for _, store := range []struct {
		name string
		put  func(t *testing.T, home string)
	}{
		// The file alone, on a machine without a keyring.
		{"file", func(t *testing.T, home string) {
			keyringtest.NoBus(t)
			if err := os.WriteFile(servers.SecretsPath(home), []byte(`{"api_token": "`+secret+`"}`), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"keyring", func(t *testing.T, home string) {
			keyringtest.Start(t)
			if err := keyring.Set(context.Background(), "api_token", secret); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(store.name, func(t *testing.T) { testSecretReachesOnlyTheChild(t, secret, store.put) })
	}
}

func testSecretReachesOnlyTheChild(t *testing.T, secret string, put func(t *testing.T, home string)) {
	out := filepath.Join(t.TempDir(), "seen")
	var log testkit.Buffer
	// The child gets its token, prints it in a failure message, and exits.
	h, url := startHubWith(t, `{"mcpServers": {"api": {"command": "sh",
		"args": ["-c", "printf %s \"$API_TOKEN\" > \"$OUT\"; echo \"auth with $API_TOKEN was refused\" >&2; exit 3"],
		"env": {"API_TOKEN": "${secret:api_token}", "OUT": "`+out+`"}, "restart_on_failure": false}}}`, &log, false)
	put(t, h.home)
	res, err := http.Post(url+"/servers/api/start", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	startBody, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if got, _ := os.ReadFile(out); string(got) != secret {
		t.Fatalf("the child saw API_TOKEN=%q", got)
	}
	st := h.child("api").status()
	if st.State != servers.Failed || !strings.Contains(st.LastError, "auth with ${secret:api_token} was refused") {
		t.Fatalf("status: %+v", st)
	}
	seen := map[string]string{"POST /servers/api/start": string(startBody), "the hub's log": log.String()}
	for _, path := range []string{"/servers", "/servers/api", "/health", "/health/api"} {
		res, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		seen["GET "+path] = string(body)
	}
	logFile, _ := os.ReadFile(servers.LogPath(h.home, "api"))
	seen["the server's log file"] = string(logFile)
	env := &op.Env{Home: h.home}
	for name, run := range map[string]func() (any, error){
		"lm servers show": func() (any, error) { return servers.Show(context.Background(), env, servers.NameInput{Name: "api"}) },
		"lm servers list": func() (any, error) { return servers.List(context.Background(), env, servers.ListInput{}) },
		"lm servers logs": func() (any, error) { return servers.Logs(context.Background(), env, servers.LogsInput{Name: "api"}) },
	} {
		v, err := run()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		data, _ := json.Marshal(v)
		seen[name] = string(data)
	}
	for where, text := range seen {
		if strings.Contains(text, secret) {
			t.Errorf("the secret appears in %s: %s", where, text)
		}
	}
	if !strings.Contains(seen["lm servers logs"], "${secret:api_token}") || !strings.Contains(seen["lm servers show"], "${secret:api_token}") {
		t.Errorf("logs and show name the reference instead: %s / %s", seen["lm servers logs"], seen["lm servers show"])
	}
}

// TestADroppedSSEStreamEndsTheSession: a server reached over the legacy SSE
// transport dies while a call waits for its answer on that stream. The
// session ends at once: the call fails and the server leaves running,
// long before the call's timeout or the next health probe (both a minute
// here, past the test's deadline).
func TestADroppedSSEStreamEndsTheSession(t *testing.T) {
	everything := npmtest.Skip(t, "mcp-server-everything")
	port := testkit.FreePort(t)
	kill := npmtest.Serve(t, everything, "sse", port)
	h, url := startHub(t, fmt.Sprintf(`{"mcpServers": {"remote": {"url": "http://127.0.0.1:%d/sse", "transport": "sse",
		"auto_start": true, "timeout": 60, "health_check_interval": 60, "restart_on_failure": false}}}`, port))
	settled(t, h, "remote")
	cl := connect(t, url+"/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	running := make(chan struct{})
	var once sync.Once
	cl.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			once.Do(func() { close(running) })
		}
	})
	done := make(chan error, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "remote__trigger-long-running-operation", map[string]any{"duration": 50, "steps": 50}
		req.Params.Meta = &mcp.Meta{ProgressToken: "p"}
		_, err := cl.CallTool(ctx, req)
		done <- err
	}()
	select {
	case <-running:
	case err := <-done:
		t.Fatalf("the call ended before it ran: %v", err)
	}
	kill()
	if err := <-done; err == nil || ctx.Err() != nil {
		t.Fatalf("the call on a dropped stream: %v (deadline passed: %v)", err, ctx.Err() != nil)
	}
	s := awaitState(t, h, "remote", servers.Failed, 20*time.Second)
	if !strings.Contains(s.LastError, "SSE stream ended") {
		t.Errorf("last error %q does not say the stream ended", s.LastError)
	}
}
