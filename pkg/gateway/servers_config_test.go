package gateway_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"lmtool.dev/lm/pkg/gateway"
	"lmtool.dev/lm/pkg/npmtest"
	"lmtool.dev/lm/pkg/proc"
	"lmtool.dev/lm/pkg/servers"
)

// configured reports whether servers.json in home names a server.
func configured(t *testing.T, home, name string) bool {
	t.Helper()
	cfg, err := servers.Load(home)
	if err != nil {
		t.Fatal(err)
	}
	_, ok := cfg.Servers[name]
	return ok
}

// awaitFile waits until path exists.
func awaitFile(t *testing.T, path, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s: %s never appeared", what, path)
}

// Adding, installing and removing servers decide which programs the
// gateway runs: an agent's token and a caller without one are refused, and
// nothing they ask for is written or started.
func TestServersConfigIsThePersons(t *testing.T) {
	home := t.TempDir()
	g := startIn(t, home, gateway.Options{})
	marker := filepath.Join(home, "agent-ran-this")
	evil := fmt.Sprintf(`{"name": "evil", "command": ["sh", "-c", "touch %s"], "auto_start": true}`, marker)
	pkgDir := t.TempDir()
	os.WriteFile(filepath.Join(pkgDir, "package.json"), []byte(`{"name": "mcp-server-evil", "version": "1.0.0", "bin": "run.sh"}`), 0o644)
	agent := g.agentHeaders("claude")["Authorization"]

	for _, who := range []struct{ name, auth string }{{"agent", agent}, {"anonymous", ""}} {
		want := map[string]int{"agent": 403, "anonymous": 401}[who.name]
		if code, body := g.do("POST", "/api/servers", evil, "Authorization", who.auth); code != want {
			t.Errorf("%s: POST /api/servers = %d %v, want %d", who.name, code, body, want)
		}
		if code, body := g.do("POST", "/api/servers/install", fmt.Sprintf(`{"package": %q, "auto_start": true}`, pkgDir), "Authorization", who.auth); code != want {
			t.Errorf("%s: POST /api/servers/install = %d %v, want %d", who.name, code, body, want)
		}
	}
	if configured(t, home, "evil") {
		t.Fatal("a server an agent asked for is in servers.json")
	}
	if _, err := os.Stat(servers.NodePrefix(home)); !os.IsNotExist(err) {
		t.Errorf("an install an agent asked for ran npm: %s exists (%v)", servers.NodePrefix(home), err)
	}

	// The person adds one the same way; once it has run, the agent's
	// would have too, had it been started.
	ran := filepath.Join(home, "person-ran-this")
	person := fmt.Sprintf(`{"name": "mine", "command": ["sh", "-c", "touch %s; exec sleep 600"], "auto_start": true}`, ran)
	if code, body := g.do("POST", "/api/servers", person); code != 201 || body["done"] != "added" {
		t.Fatalf("the person's POST /api/servers = %d %v", code, body)
	}
	awaitFile(t, ran, "the person's server")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the agent's command ran")
	}

	// Nor may an agent remove what the person configured.
	if code, body := g.do("DELETE", "/api/servers/mine", "", "Authorization", agent); code != 403 {
		t.Errorf("agent: DELETE /api/servers/mine = %d %v", code, body)
	}
	if !configured(t, home, "mine") {
		t.Fatal("an agent removed a server")
	}
	if code, body := g.do("DELETE", "/api/servers/mine", ""); code != 200 || body["done"] != "removed" {
		t.Fatalf("the person's DELETE = %d %v", code, body)
	}
	if configured(t, home, "mine") {
		t.Fatal("removed, yet still configured")
	}
	// The CLI's validation, and its exit codes as statuses.
	for _, c := range []struct {
		method, path, body string
		code               int
		says               string
	}{
		{"POST", "/api/servers", `{"name": "bad name", "command": ["true"]}`, 422, "is not a valid server name"},
		{"POST", "/api/servers", `{"name": "none"}`, 422, "give either a command"},
		{"POST", "/api/servers", `{"name": "x", "url": "ftp://example.com"}`, 422, "is not an http URL"},
		{"POST", "/api/servers/install", `{"package": "--prefix=/tmp"}`, 422, "not a package npm can install"},
		{"POST", "/api/servers/install", `{"package": "x", "allow_scripts": true}`, 403, "only lm's command line may allow them"},
		{"DELETE", "/api/servers/nope", "", 404, `no server named "nope"`},
	} {
		code, body := g.do(c.method, c.path, c.body)
		if msg, _ := body["error"].(string); code != c.code || !strings.Contains(msg, c.says) {
			t.Errorf("%s %s %s = %d %v, want %d saying %q", c.method, c.path, c.body, code, body, c.code, c.says)
		}
	}
}

// A person adds a server on the Servers view, sees it run, and removes
// it; a bad entry shows the CLI's own complaint in the form.
func TestServersViewAddsAndRemoves(t *testing.T) {
	memory := npmtest.Skip(t, "mcp-server-memory")
	ctx := browser(t)
	home := t.TempDir()
	g := startIn(t, home, gateway.Options{})
	if err := chromedp.Do(ctx, chromedp.Navigate(g.page()), showView("#servers"), chromedp.WaitVisible("#server-form")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#servers-empty", contains("Add one with the form under “Add a server”"), "the empty state")

	// The CLI's validation, shown where the person typed.
	if err := chromedp.Do(ctx, setValue("#srv-name", "bad name"), setValue("#srv-command", "true"),
		chromedp.Click("#server-form-submit")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#server-form-error", contains("is not a valid server name (accepted: 1–32 letters"), "a bad name")
	if err := chromedp.Do(ctx, setValue("#srv-name", "memory"), setValue("#srv-command", `"unclosed`),
		chromedp.Click("#server-form-submit")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#server-form-error", contains("unclosed double quote"), "a command that does not split")
	checkContrast(t, ctx, "the servers form with an error")
	if configured(t, home, "memory") || configured(t, home, "bad name") {
		t.Fatal("a refused entry was written")
	}

	if err := chromedp.Do(ctx, setValue("#srv-command", memory),
		setValue("#srv-env", "MEMORY_FILE_PATH="+filepath.Join(home, "memory.jsonl")),
		setValue("#srv-description", "A knowledge graph"),
		chromedp.Click("#server-form-submit")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, `#servers li[data-name="memory"] .tag`, contains("running"), "the added server")
	waitText(t, ctx, "#server-form-error", func(s string) bool { return s == "" }, "the form's error after it worked")
	cfg, err := servers.Load(home)
	if err != nil || cfg.Servers["memory"] == nil || cfg.Servers["memory"].Command != memory || cfg.Servers["memory"].Description != "A knowledge graph" {
		t.Fatalf("servers.json after adding on the page: %+v %v", cfg, err)
	}
	code, st := g.do("GET", "/servers/memory", "")
	pid, _ := st["pid"].(float64)
	if code != 200 || st["state"] != servers.Running || pid == 0 {
		t.Fatalf("GET /servers/memory = %d %v", code, st)
	}
	shot(t, ctx, "servers-added")
	onPhone(t, ctx, "the servers view with its form")
	shot(t, ctx, "servers-added-phone")
	checkContrast(t, ctx, "the servers view on a phone")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}

	// An npm package (here a directory, so no registry is needed) installs
	// under LM_HOME and runs.
	pkg := t.TempDir()
	os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name": "mcp-server-wrapped", "version": "1.0.0", "bin": "run.sh"}`), 0o644)
	os.WriteFile(filepath.Join(pkg, "run.sh"), []byte("#!/bin/sh\nexec "+memory+"\n"), 0o755)
	if err := chromedp.Do(ctx, chromedp.Click(`#server-form input[value="package"]`), setValue("#srv-package", pkg)); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#server-form-submit", contains("Install server"), "the install form")
	click(t, ctx, "#server-form-submit")
	waitText(t, ctx, `#servers li[data-name="wrapped"] .tag`, contains("running"), "the installed server")
	if cfg, err := servers.Load(home); err != nil || cfg.Servers["wrapped"] == nil || cfg.Servers["wrapped"].Package != "mcp-server-wrapped" {
		t.Fatalf("servers.json after installing on the page: %+v %v", cfg, err)
	}

	// Remove asks for a second click, then the server stops and goes.
	click(t, ctx, `#servers li[data-name="memory"] button[data-action="remove"]`)
	waitText(t, ctx, `#servers li[data-name="memory"] button[data-action="remove"]`, contains("Remove it?"), "the confirmation")
	if !configured(t, home, "memory") {
		t.Fatal("one click removed the server")
	}
	click(t, ctx, `#servers li[data-name="memory"] button[data-action="remove"]`)
	waitText(t, ctx, "#servers", func(s string) bool { return !strings.Contains(s, "memory") }, "the removed server")
	waitText(t, ctx, "#servers", contains("wrapped"), "the server left")
	if configured(t, home, "memory") {
		t.Fatal("removed on the page, yet still in servers.json")
	}
	for deadline := time.Now().Add(30 * time.Second); proc.Running(int(pid)); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the removed server's process %d still runs", int(pid))
		}
	}
}
