package testscripts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/npmtest"
	"lmtool.dev/lm/pkg/registry"
	"lmtool.dev/lm/pkg/testkit"
)

// interopWorld is what the third-party clients work against: a git project,
// a store with server-everything configured twice — "everything", a stdio
// child the hub runs, and "remote", one already serving streamable HTTP
// (so that direct calls need not start a process each) — and a gateway
// serving /mcp behind a token.
type interopWorld struct {
	home, project, addr, token string
	// nodeDir is testdata/node: the pinned npm packages and the scripts
	// that drive them.
	nodeDir string
}

func newInteropWorld(t *testing.T) *interopWorld {
	t.Helper()
	everything := npmtest.Skip(t, "mcp-server-everything")
	w := &interopWorld{home: t.TempDir(), project: t.TempDir(), token: "interop-token",
		nodeDir: filepath.Dir(filepath.Dir(filepath.Dir(everything)))}
	copyDir(t, filepath.Join(w.nodeDir, "interop", "project"), w.project)
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=lm", "-c", "user.email=lm@example.com", "commit", "-qm", "start"}} {
		if out, err := exec.Command("git", append([]string{"-C", w.project}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	// A person allowed the project's tasks; agents may run them.
	allow := fmt.Sprintf("[[entries]]\npath = %q\nscope = \"Directory\"\n", w.project)
	if err := os.WriteFile(filepath.Join(w.home, "mcp_allowlist.toml"), []byte(allow), 0o600); err != nil {
		t.Fatal(err)
	}
	runLM(t, w.home, "", "servers", "add", "everything", "--auto-start", "--", everything)
	runLM(t, w.home, "", "servers", "add", "remote", "--url", serveHTTP(t, everything)+"/mcp")
	// get_user_request on an empty queue answers after the person's wait.
	runLM(t, w.home, "", "queue", "config", "default_wait_seconds=1")
	w.startGateway(t)
	return w
}

// serveHTTP runs server-everything over streamable HTTP on a free loopback
// port and returns its base URL.
func serveHTTP(t *testing.T, everything string) string {
	t.Helper()
	port := testkit.FreePort(t)
	npmtest.Serve(t, everything, "streamableHttp", port)
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

func (w *interopWorld) startGateway(t *testing.T) {
	t.Helper()
	addrFile := filepath.Join(w.home, "addr")
	gw := exec.Command("lm", "gateway", "--addr", "127.0.0.1:0", "--addr-file", addrFile)
	gw.Env, gw.Dir = append(lmEnv(w.home), "LM_API_TOKEN="+w.token), w.project
	var log bytes.Buffer
	gw.Stdout, gw.Stderr = &log, &log
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		gw.Process.Signal(syscall.SIGINT)
		gw.Wait()
		if t.Failed() {
			t.Logf("gateway log (the end):\n%s", tail(log.String(), 4000))
		}
	})
	waitFor(t, func() bool {
		addr, err := os.ReadFile(addrFile)
		w.addr = strings.TrimSpace(string(addr))
		return err == nil && w.addr != ""
	})
	w.awaitEverything(t)
}

// awaitEverything waits until the hub runs server-everything.
func (w *interopWorld) awaitEverything(t *testing.T) { w.awaitServer(t, "everything") }

// awaitServer waits until the hub runs the server name.
func (w *interopWorld) awaitServer(t *testing.T, name string) {
	t.Helper()
	waitFor(t, func() bool {
		out, _ := runLM(t, w.home, "", "servers", "status", "-r", "--jq", fmt.Sprintf(`.servers[] | select(.name==%q) | .state`, name))
		return strings.TrimSpace(out) == "running"
	})
}

func (w *interopWorld) url(path string) string { return "http://" + w.addr + path }

// fixtures are the calls the clients make: lm's tools, and
// server-everything's as a proxy in front of it names them.
func (w *interopWorld) fixtures(everythingPrefix string, lm bool) []map[string]string {
	files := []map[string]string{{"file": filepath.Join(w.nodeDir, "interop", "everything.json"), "prefix": everythingPrefix}}
	if lm {
		files = append(files, map[string]string{"file": filepath.Join(w.nodeDir, "interop", "fixtures.json")})
	}
	return files
}

// lmCommand runs `lm mcp` in the project with the world's store.
func (w *interopWorld) lmCommand(args ...string) map[string]any {
	lm, _ := exec.LookPath("lm")
	return map[string]any{"transport": "stdio", "command": lm, "args": append([]string{"mcp"}, args...), "cwd": w.project,
		"env": map[string]string{"LM_HOME": w.home, "LM_STORE": ""}}
}

// clientReport is what testdata/node/interop/client.mjs prints.
type clientReport struct {
	Fatal           string         `json:"fatal"`
	ProtocolVersion string         `json:"protocolVersion"`
	Capabilities    map[string]any `json:"capabilities"`
	Tools           []struct{ Name string }
	Resources       []string        `json:"resources"`
	Templates       []string        `json:"templates"`
	Prompts         []string        `json:"prompts"`
	SetLevel        string          `json:"setLevel"`
	Calls           map[string]call `json:"calls"`
	Invalid         map[string]struct {
		Field     string `json:"field"`
		IsError   bool   `json:"isError"`
		NamesText bool   `json:"namesField"`
		Text      string `json:"text"`
		Exception string `json:"exception"`
	} `json:"invalid"`
}

type call struct {
	Tool      string `json:"tool"`
	Expect    string `json:"expect"`
	Outcome   string `json:"outcome"`
	Category  string `json:"category"`
	Error     string `json:"error"`
	Problem   string `json:"problem"`
	Validated bool   `json:"validated"`
}

func (r clientReport) toolNames() []string {
	names := make([]string, len(r.Tools))
	for i, tool := range r.Tools {
		names[i] = tool.Name
	}
	sort.Strings(names)
	return names
}

// runClient runs the SDK client script with opts and returns its report.
func (w *interopWorld) runClient(t *testing.T, opts map[string]any) clientReport {
	t.Helper()
	raw, _ := json.Marshal(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(w.nodeDir, "interop", "client.mjs"), string(raw))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var r clientReport
	if jerr := json.Unmarshal(out, &r); jerr != nil {
		t.Fatalf("client %s: %v (%v)\n%s\n%s", raw, err, jerr, tail(string(out), 2000), tail(stderr.String(), 4000))
	}
	if r.Fatal != "" {
		t.Fatalf("client %s: %s\n%s", raw, r.Fatal, tail(stderr.String(), 4000))
	}
	return r
}

// mcpTools lists the tools lm serves for these groups (all when empty).
func mcpTools(groups ...string) []string {
	var names []string
	for _, o := range registry.All() {
		m := o.Info()
		if !m.CLIOnly && !m.Stream && (len(groups) == 0 || slices.Contains(groups, m.Group())) {
			names = append(names, m.Name)
		}
	}
	sort.Strings(names)
	return names
}

// checkCalls holds every call of a report to what a host needs: no
// exception in the client (the SDK 1.x client itself checks
// structuredContent against outputSchema), structuredContent valid by ajv,
// every fixture's expected outcome, and for lm's own tools a mistyped
// field refused by an isError result that names it.
func checkCalls(t *testing.T, r clientReport, lmTools []string) {
	t.Helper()
	for _, name := range r.toolNames() {
		if _, ok := r.Calls[name]; !ok {
			t.Errorf("%s was listed but not called", name)
		}
	}
	outcomes := map[string]int{}
	for _, c := range r.Calls {
		outcomes[c.Outcome+" "+c.Category]++
	}
	t.Logf("%d calls: %v", len(r.Calls), outcomes)
	for key, c := range r.Calls {
		switch {
		case c.Outcome == "task only" && !slices.Contains(lmTools, c.Tool):
			// server-everything's task-only tool: not callable without tasks.
		case c.Outcome == "exception" || c.Outcome == "not called" || c.Outcome == "task only":
			t.Errorf("%s: %s: %s%s", key, c.Outcome, c.Error, c.Problem)
		case c.Problem != "":
			t.Errorf("%s: %s", key, c.Problem)
		case c.Expect == "ok" && c.Outcome != "ok":
			t.Errorf("%s: want success, got %s %s: %s", key, c.Outcome, c.Category, c.Error)
		case c.Expect != "" && c.Expect != "ok" && c.Category != c.Expect:
			t.Errorf("%s: want error %s, got %s %s: %s", key, c.Expect, c.Outcome, c.Category, c.Error)
		case c.Outcome == "ok" && slices.Contains(lmTools, c.Tool) && !c.Validated:
			t.Errorf("%s: structuredContent was not validated against the outputSchema", key)
		}
	}
	for _, name := range lmTools {
		inv, ok := r.Invalid[name]
		switch {
		case !ok:
			t.Errorf("%s: not called with a mistyped field", name)
		case inv.Exception != "":
			t.Errorf("%s: a mistyped %q threw in the client: %s", name, inv.Field, inv.Exception)
		case !inv.IsError || !inv.NamesText:
			t.Errorf("%s: a mistyped %q came back without an isError naming it: %s", name, inv.Field, inv.Text)
		}
	}
}

// TestTypeScriptSDKClients: the official TypeScript SDK clients, 1.x (what
// most MCP hosts embed) and 2.x, on every face: list everything, call every
// tool, validate every structuredContent.
func TestTypeScriptSDKClients(t *testing.T) {
	for _, sdk := range []string{"1", "2"} {
		t.Run("sdk"+sdk, func(t *testing.T) {
			// Each line gets a world of its own, so the two run side by side.
			t.Parallel()
			sdkOnEveryFace(t, sdk)
		})
	}
}

func sdkOnEveryFace(t *testing.T, sdk string) {
	w := newInteropWorld(t)
	everythingTools := func(r clientReport, prefix string) []string {
		var names []string
		for _, n := range r.toolNames() {
			if strings.HasPrefix(n, prefix) && !slices.Contains(mcpTools(), n) {
				names = append(names, n)
			}
		}
		return names
	}
	gateway := w.listedByMCPGo(t, "/mcp")
	for _, face := range []struct {
		name   string
		opts   map[string]any
		lm     []string // lm's tools the face lists
		prefix string   // how the face names server-everything's tools
	}{
		{"stdio/default", w.lmCommand(), w.listedByMCPGo(t, ""), ""},
		{"stdio/all-groups", w.lmCommand(allGroupsFlags()...), mcpTools(), ""},
		{"http", map[string]any{"transport": "http", "url": w.url("/mcp")}, gateway, "everything__"},
		{"sse", map[string]any{"transport": "sse", "url": w.url("/mcp/sse")}, gateway, "everything__"},
		{"http-server", map[string]any{"transport": "http", "url": w.url("/mcp/everything")}, nil, ""},
	} {
		t.Run(face.name, func(t *testing.T) {
			opts := map[string]any{"sdk": sdk, "token": w.token, "fixtures": w.fixtures(face.prefix, face.lm != nil)}
			for k, v := range face.opts {
				opts[k] = v
			}
			r := w.runClient(t, opts)
			got := r.toolNames()
			var lmListed []string
			for _, n := range got {
				if slices.Contains(mcpTools(), n) {
					lmListed = append(lmListed, n)
				}
			}
			if !slices.Equal(lmListed, face.lm) {
				t.Errorf("lm tools listed:\n%v\nwant:\n%v", lmListed, face.lm)
			}
			if face.opts["transport"] != "stdio" && len(everythingTools(r, face.prefix)) == 0 {
				t.Errorf("the hub's server-everything tools are missing: %v", got)
			}
			if face.lm != nil && (!slices.Contains(r.Resources, "tasks://cwd") || !slices.Contains(r.Templates, "joblog://{id}{?from}")) {
				t.Errorf("resources %v, templates %v", r.Resources, r.Templates)
			}
			checkCalls(t, r, face.lm)
			// A run with every group stops and starts the hub's server; the
			// next face finds it running again.
			w.awaitEverything(t)
		})
	}
}

// allGroupsFlags are `lm mcp`'s flags that let an agent call every tool.
func allGroupsFlags() []string { return []string{"--allow", "all"} }

// listedByMCPGo is what mcp-go's client lists of lm's own tools from `lm mcp`
// without flags (path "") or from the gateway's path: the face's tool set,
// seen by an independent client.
func (w *interopWorld) listedByMCPGo(t *testing.T, path string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var c *client.Client
	if path == "" {
		c = startMCPIn(t, w.home, w.project, "interop-default")
	} else {
		var err error
		c, err = client.NewStreamableHttpClient(w.url(path), transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + w.token}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		req := mcp.InitializeRequest{}
		req.Params.ClientInfo = mcp.Implementation{Name: "interop-mcp-go", Version: "1"}
		if _, err := c.Initialize(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		if slices.Contains(mcpTools(), tool.Name) {
			names = append(names, tool.Name)
		}
	}
	sort.Strings(names)
	return names
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// tail is the end of a long log.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// TestInspectorCLI: the MCP Inspector's CLI lists the tools and calls one on
// every face.
func TestInspectorCLI(t *testing.T) {
	w := newInteropWorld(t)
	lm, _ := exec.LookPath("lm")
	bearer := "Authorization: Bearer " + w.token
	for _, face := range []struct {
		name   string
		target []string
		tool   string // a tool the face lists
		args   []string
		want   string // in the call's structuredContent or text
	}{
		{"stdio", []string{lm, "mcp"}, "local_generate", []string{"template=Hello from the inspector"}, `"Hello from the inspector"`},
		{"http", []string{w.url("/mcp"), "--transport", "http", "--header", bearer}, "everything__echo", []string{"message=through /mcp"}, "Echo: through /mcp"},
		{"sse", []string{w.url("/mcp/sse"), "--transport", "sse", "--header", bearer}, "lm_version", nil, `"version"`},
		{"http-server", []string{w.url("/mcp/everything"), "--transport", "http", "--header", bearer}, "echo", []string{"message=to one server"}, "Echo: to one server"},
	} {
		t.Run(face.name, func(t *testing.T) {
			var list struct{ Tools []struct{ Name string } }
			inspect(t, w, &list, append(face.target, "--method", "tools/list")...)
			if !slices.ContainsFunc(list.Tools, func(tool struct{ Name string }) bool { return tool.Name == face.tool }) {
				t.Fatalf("tools/list has no %s: %v", face.tool, list.Tools)
			}
			args := append(face.target, "--method", "tools/call", "--tool-name", face.tool)
			for _, a := range face.args {
				args = append(args, "--tool-arg", a)
			}
			var result struct {
				IsError           bool `json:"isError"`
				Content           []struct{ Text string }
				StructuredContent json.RawMessage `json:"structuredContent"`
			}
			inspect(t, w, &result, args...)
			text := string(result.StructuredContent)
			for _, c := range result.Content {
				text += c.Text
			}
			if result.IsError || !strings.Contains(text, face.want) {
				t.Errorf("tools/call %s: isError %v, %s", face.tool, result.IsError, text)
			}
		})
	}
}

// inspect runs the Inspector CLI and decodes the JSON it prints.
func inspect(t *testing.T, w *interopWorld, into any, args ...string) {
	t.Helper()
	cmd := exec.Command("node", append([]string{filepath.Join(w.nodeDir, "node_modules", ".bin", "mcp-inspector-cli"), "--cli"}, args...)...)
	// 1.0.3 looks for its package.json relative to the working directory
	// but loads it relative to itself: from a directory one below
	// testdata/node the two agree.
	cmd.Dir = filepath.Join(w.nodeDir, "interop")
	cmd.Env = lmEnv(w.home)
	out, err := cmd.CombinedOutput()
	start := bytes.IndexByte(out, '{')
	if err != nil || start < 0 {
		t.Fatalf("inspector %v: %v\n%s", args, err, tail(string(out), 4000))
	}
	if err := json.NewDecoder(bytes.NewReader(out[start:])).Decode(into); err != nil {
		t.Fatalf("inspector %v: %v\n%s", args, err, tail(string(out), 4000))
	}
}

// The protocol versions lm is verified with: what the TypeScript SDKs
// speak, and mcp-go's newest, stateless one.
var (
	handshakeVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}
	statelessVersion  = "2026-07-28"
)

// TestProtocolVersions: clients pinned to each protocol version negotiate
// it, list the tools, call one and set the log level where the version has
// logging/setLevel.
func TestProtocolVersions(t *testing.T) {
	w := newInteropWorld(t)
	for _, version := range handshakeVersions {
		for _, c := range []struct {
			sdk  string
			face map[string]any
		}{
			{"1", w.lmCommand()},
			{"2", map[string]any{"transport": "http", "url": w.url("/mcp")}},
		} {
			t.Run(fmt.Sprintf("%s/sdk%s/%s", version, c.sdk, c.face["transport"]), func(t *testing.T) {
				opts := map[string]any{"sdk": c.sdk, "token": w.token, "protocol": version, "callOnly": []string{"lm_version"}, "logLevel": "debug"}
				for k, v := range c.face {
					opts[k] = v
				}
				r := w.runClient(t, opts)
				if r.ProtocolVersion != version {
					t.Errorf("asked for %s, the server answered %s", version, r.ProtocolVersion)
				}
				if r.Capabilities["logging"] == nil || r.SetLevel != "ok" {
					t.Errorf("logging capability %v, logging/setLevel: %s", r.Capabilities["logging"], r.SetLevel)
				}
				if len(r.Tools) == 0 || r.Calls["lm_version"].Outcome != "ok" || !r.Calls["lm_version"].Validated {
					t.Errorf("%d tools, lm_version: %+v", len(r.Tools), r.Calls["lm_version"])
				}
			})
		}
	}
	for _, version := range append(slices.Clone(handshakeVersions), statelessVersion) {
		for _, face := range []string{"stdio", "http"} {
			t.Run(version+"/mcp-go/"+face, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				var c *client.Client
				var err error
				if face == "stdio" {
					c, err = client.NewStdioMCPClientWithOptions("lm", []string{"LM_HOME=" + w.home, "LM_STORE="}, []string{"mcp"})
				} else {
					c, err = client.NewStreamableHttpClient(w.url("/mcp"), transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + w.token}))
				}
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if err := c.Start(ctx); err != nil {
					t.Fatal(err)
				}
				req := mcp.InitializeRequest{}
				req.Params.ProtocolVersion = version
				req.Params.ClientInfo = mcp.Implementation{Name: "interop-mcp-go", Version: "1"}
				init, err := c.Initialize(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if init.ProtocolVersion != version {
					t.Errorf("asked for %s, the server answered %s", version, init.ProtocolVersion)
				}
				tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
				if err != nil || len(tools.Tools) == 0 {
					t.Fatalf("tools/list: %v (%d tools)", err, len(tools.Tools))
				}
				call := mcp.CallToolRequest{}
				call.Params.Name = "lm_version"
				res, err := c.CallTool(ctx, call)
				if err != nil || res.IsError || res.StructuredContent == nil {
					t.Fatalf("lm_version: %v %+v", err, res)
				}
				if version != statelessVersion {
					level := mcp.SetLevelRequest{}
					level.Params.Level = mcp.LoggingLevelDebug
					if err := c.SetLevel(ctx, level); err != nil {
						t.Errorf("logging/setLevel: %v", err)
					}
				}
			})
		}
	}
}

// TestStrictClientBesideALooseUpstream: a configured server lists a tool
// whose schema strict clients reject. The TypeScript SDK 1.x client still
// lists /mcp (lm's tools and the server's other tool); the server's own
// endpoint passes the tool on as the server gave it; lm servers status says
// what was left off and why.
func TestStrictClientBesideALooseUpstream(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	w := newInteropWorld(t)
	runLM(t, w.home, "", "servers", "add", "loose", "--auto-start", "--", node, filepath.Join(w.nodeDir, "interop", "loose-schema-server.mjs"))
	runLM(t, w.home, "", "servers", "start", "loose")
	w.awaitServer(t, "loose")

	r := w.runClient(t, map[string]any{"sdk": "1", "transport": "http", "url": w.url("/mcp"), "token": w.token, "calls": false})
	names := r.toolNames()
	for _, want := range []string{"get_user_request", "loose__fine", "everything__echo"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s is missing from /mcp: %v", want, names)
		}
	}
	if slices.Contains(names, "loose__loose") {
		t.Error("/mcp lists the tool strict clients reject")
	}
	out, _ := runLM(t, w.home, "", "servers", "status", "loose", "-r", "--jq", ".servers[0].unlisted[]")
	if !strings.Contains(out, `loose: inputSchema: property "anything" is the boolean schema true`) {
		t.Errorf("servers status does not say what was left off: %q", out)
	}

	// The server's own endpoint is the server as it is.
	c, err := client.NewStreamableHttpClient(w.url("/mcp/loose"), transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + w.token}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "interop", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var loose []byte
	for _, tool := range tools.Tools {
		if tool.Name == "loose" {
			loose, _ = json.Marshal(tool.InputSchema)
		}
	}
	if !strings.Contains(string(loose), `"anything":true`) {
		t.Errorf("/mcp/loose changed the tool's schema: %s", loose)
	}
}

// TestCallProgressOnATerminal: on a terminal, lm servers call shows the
// server's progress as one line rewritten in place, ended once complete.
func TestCallProgressOnATerminal(t *testing.T) {
	everything := npmtest.Skip(t, "mcp-server-everything")
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	cmd := exec.Command("lm", "servers", "call", "trigger-long-running-operation", `{"duration":0.3,"steps":3}`, "--", everything)
	cmd.Env = lmEnv(t.TempDir())
	var stdout bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, &stdout, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	screen, _ := io.ReadAll(ptmx) // ends with EIO once lm has exited
	if err := cmd.Wait(); err != nil {
		t.Fatalf("lm servers call: %v\n%s", err, screen)
	}
	for _, want := range []string{"\r\x1b[Klm: trigger-long-running-operation: 1/3", "\r\x1b[Klm: trigger-long-running-operation: 3/3"} {
		if !bytes.Contains(screen, []byte(want)) {
			t.Errorf("the terminal lacks %q:\n%q", want, screen)
		}
	}
	if bytes.Contains(screen, []byte("1/3\r\n")) {
		t.Errorf("progress before the end ends its line:\n%q", screen)
	}
	if !strings.Contains(stdout.String(), "Long running operation completed") {
		t.Errorf("stdout: %s", stdout.String())
	}
}

// Both SDK lines keep working against a --stateful gateway whose session
// limit is reached: each client's initialize ends the oldest session, and
// the client holding the newest one lists and calls as before.
func TestTypeScriptSDKOnAStatefulGateway(t *testing.T) {
	everything := npmtest.Skip(t, "mcp-server-everything")
	w := &interopWorld{home: t.TempDir(), token: "interop-token", nodeDir: filepath.Dir(filepath.Dir(filepath.Dir(everything)))}
	_, url, _ := idleGatewayWith(t, w.home, w.token, "--stateful", "--max-sessions", "1")
	for range 2 {
		for _, sdk := range []string{"1", "2"} {
			r := w.runClient(t, map[string]any{"sdk": sdk, "token": w.token, "transport": "http", "url": url + "/mcp", "callOnly": []string{"lm_version"}})
			if len(r.Tools) == 0 || r.Calls["lm_version"].Outcome != "ok" || !r.Calls["lm_version"].Validated {
				t.Fatalf("SDK %s on a stateful gateway: %d tools, lm_version %+v", sdk, len(r.Tools), r.Calls["lm_version"])
			}
		}
	}
}
