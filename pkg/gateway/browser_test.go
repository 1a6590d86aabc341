package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"lmtool.dev/lm/pkg/gateway"
)

// browser opens a fresh headless Chromium, or skips when none is installed
// (unless LM_REQUIRE_BROWSER=1, as in CI).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("LM_REQUIRE_BROWSER") == "1" {
			t.Fatal("LM_REQUIRE_BROWSER=1 but no chromium is installed")
		}
		t.Skip("no chromium installed")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// shot saves a screenshot as a test artefact, so a person can look at
// what the page looks like: in $LM_SCREENSHOTS when set, else in the
// test's artefact directory (kept with `go test -artifacts -outputdir DIR`).
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	settle(t, ctx)
	// From the top, so the sticky rail sits where a person first sees it.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { window.scrollTo(0, 0); return true })()`)); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := os.Getenv("LM_SCREENSHOTS")
	if dir == "" {
		dir = t.ArtifactDir()
	}
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// textOf waits until the element's text satisfies ok.
func waitText(t *testing.T, ctx context.Context, sel string, ok func(string) bool, what string) string {
	t.Helper()
	var text string
	// Generous: a loaded CI machine runs several test binaries at once.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		var err error
		if text, err = chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+quote(sel)+`)||{}).textContent||""`)); err != nil {
			t.Fatal(err)
		}
		if ok(text) {
			return text
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: %s is %q", what, sel, text)
	return ""
}

// setValue sets a form field's value as typing would.
func setValue(sel, value string) chromedp.Action[chromedp.Void] {
	v, _ := json.Marshal(value)
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`(() => { const e = document.querySelector(`+quote(sel)+`); e.value = `+string(v)+`; e.dispatchEvent(new Event("input", {bubbles: true})); return true })()`)(ctx, t)
		return err
	})
}

// phoneWidth is the width of the phone onPhone emulates, in CSS pixels.
const phoneWidth = 390

// onPhone switches to a phone's viewport and checks that what is shown is
// no wider than the phone. A mobile viewport widens itself to fit the page,
// so the width to stay within is the phone's, not innerWidth.
func onPhone(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(phoneWidth, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Sleep(200*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if width, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); width > phoneWidth {
		t.Errorf("%s is %d px wide on a %d px phone", what, width, phoneWidth)
	}
}

// showView switches the open page to the view at hash (#ask, #servers),
// as following a link to it does: the page, opened once from the URL with
// the token, stays loaded.
func showView(hash string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`(() => { location.hash = `+quote(hash)+`; return true })()`)(ctx, t)
		return err
	})
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

func contains(sub string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, sub) }
}

func TestPageInBrowser(t *testing.T) {
	ctx := browser(t)
	g := start(t, gateway.Options{})
	g.lm("queue", "add", "Run the test suite and fix whatever fails")
	g.lm("queue", "add", "Then write the changelog entry for the gateway")
	g.lm("queue", "add", "Consumed before the page opened")
	g.lm("queue", "move", "--to", "1", strings.TrimSpace(g.lm("queue", "list", "--status", "pending", "-r", "--jq", ".items[2].id")))
	g.lm("queue", "next", "--agent-id", "claude-code")

	if err := chromedp.Do(ctx, chromedp.Navigate(g.page()), chromedp.WaitVisible("#composer-text")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#live", contains("live"), "stream")
	waitText(t, ctx, "#consumed", contains("Consumed before the page opened"), "ledger")
	waitText(t, ctx, "#agents", contains("claude-code"), "agents")

	// Add with the keyboard: n focuses the composer, Ctrl+Enter submits.
	if err := chromedp.Do(ctx,
		chromedp.Click("body", chromedp.NodeVisible),
		chromedp.KeyEvent("n"),
	); err != nil {
		t.Fatal(err)
	}
	if focused, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`)); focused != "composer-text" {
		t.Fatalf("n focused %q, not the composer", focused)
	}
	// CDP delivers the key's character separately from the keydown the page
	// cancels, so clear what a real browser would not have typed.
	if err := chromedp.Do(ctx,
		setValue("#composer-text", ""),
		chromedp.SendKeys("#composer-text", "Review the open pull requests"),
		chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
	); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#pending", contains("Review the open pull requests"), "added strip")
	if out := g.lm("queue", "list", "--status", "pending", "-r", "--jq", ".items[-1].content"); strings.TrimSpace(out) != "Review the open pull requests" {
		t.Fatalf("the store's last pending instruction is %q", out)
	}
	title, _ := chromedp.Run(ctx, chromedp.Title())
	if title != "(3) lm desk" {
		t.Errorf("title %q, want the pending count", title)
	}

	// A change from another process appears without a reload.
	g.lm("queue", "add", "Added from a shell")
	waitText(t, ctx, "#pending", contains("Added from a shell"), "live add")

	// Edit inline.
	if err := chromedp.Do(ctx,
		chromedp.Click(`#pending li:first-child button[aria-label="Edit"]`),
		chromedp.WaitVisible(`#pending li:first-child textarea`),
		setValue(`#pending li:first-child textarea`, "Run the whole test suite, then fix failures"),
		chromedp.Click(`#pending li:first-child .btn-primary`),
	); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#pending li:first-child", contains("Run the whole test suite"), "edit")
	if out := g.lm("queue", "list", "--status", "pending", "-r", "--jq", ".items[0].content"); !strings.Contains(out, "Run the whole test suite") {
		t.Fatalf("edit not stored: %q", out)
	}

	// Reorder with the keyboard: Alt+Down on the first strip.
	// (A synthetic keydown: CDP's Alt+Arrow does not reach the page's
	// handler in headless Chromium.)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const li = document.querySelector("#pending li:first-child"); li.focus();
		return li.dispatchEvent(new KeyboardEvent("keydown", {key: "ArrowDown", altKey: true, bubbles: true, cancelable: true})) })()`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#pending li:nth-child(2)", contains("Run the whole test suite"), "reorder")

	// An agent in another process (lm mcp over stdio) takes the head of the queue.
	head := strings.TrimSpace(g.lm("queue", "list", "--status", "pending", "-r", "--jq", ".items[0].content"))
	answer := g.mcpNext("stdio-agent")
	if !strings.Contains(answer, head) {
		t.Fatalf("lm mcp answered %q, want the head of the queue %q", answer, head)
	}
	waitText(t, ctx, "#consumed li:first-child", contains(head), "live consumption")
	waitText(t, ctx, "#consumed li:first-child", contains("stdio-agent"), "consuming agent")
	waitText(t, ctx, "#agents", contains("stdio-agent"), "agent panel")

	// The ledger's requeue puts it back at the head of the queue.
	if err := chromedp.Do(ctx, chromedp.Click(`#consumed li:first-child button[aria-label="Requeue"]`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#pending li:first-child", contains(head), "requeued instruction")
	if answer := g.mcpNext("stdio-agent"); !strings.Contains(answer, head) {
		t.Fatalf("after the requeue lm mcp answered %q, want %q again", answer, head)
	}
	waitText(t, ctx, "#consumed li:first-child", contains(head), "consumed again")

	// Delete, which commits after the undo window.
	if err := chromedp.Do(ctx, chromedp.Click(`#pending li:last-child button[aria-label="Delete"]`)); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if out := g.lm("queue", "list", "--status", "pending", "-r", "--jq", "[.items[].content] | join(\"|\")"); !strings.Contains(out, "Added from a shell") {
			break
		}
		if i == 100 {
			t.Fatal("the deleted instruction is still pending")
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Settings.
	if err := chromedp.Do(ctx,
		setValue("#set-wait", "25"),
		chromedp.Click(`#settings button[type="submit"]`),
	); err != nil {
		t.Fatal(err)
	}
	for i := 0; strings.TrimSpace(g.lm("queue", "config", "default_wait_seconds", "-r", "--jq", ".default_wait_seconds")) != "25"; i++ {
		if i == 100 {
			t.Fatal("the wait setting was not saved")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := chromedp.Do(ctx, setValue("#set-stale", "0"), chromedp.Click(`#settings button[type="submit"]`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#settings-error", contains("agent_stale_after_seconds"), "validation message")
	g.lm("queue", "config", "agent_stale_after_seconds=90")
	var stale string
	chromedp.Do(ctx, chromedp.Blur("#set-stale"))
	for range 100 {
		stale, _ = chromedp.Run(ctx, chromedp.Value("#set-stale"))
		if stale == "90" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if stale != "90" {
		t.Errorf("a setting changed elsewhere shows %q", stale)
	}
	waitText(t, ctx, "#settings-error", func(s string) bool { return s == "" }, "validation message after the value was replaced")
	g.lm("queue", "add", "Keep the rack busy: look at flaky tests\nand note which ones flake")
	waitText(t, ctx, "#pending", contains("flaky tests"), "instruction added from a shell")

	shot(t, ctx, "desk-light")
	checkContrast(t, ctx, "desk, light")
	if stops := checkFocus(t, ctx, "desk, light"); stops < 12 {
		t.Errorf("the Tab key reached only %d stops on the desk", stops)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#theme-toggle")); err != nil {
		t.Fatal(err)
	}
	theme, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.dataset.theme`))
	if theme != "dark" {
		t.Errorf("theme after toggle: %q", theme)
	}
	shot(t, ctx, "desk-dark")
	checkContrast(t, ctx, "desk, dark")
	checkFocus(t, ctx, "desk, dark")

	// Phone width: one column, nothing wider than the screen.
	onPhone(t, ctx, "the desk")
	shot(t, ctx, "phone-dark")
	checkContrast(t, ctx, "phone, dark")
	chromedp.Do(ctx, chromedp.Click("#theme-toggle"))
	shot(t, ctx, "phone-light")
	checkContrast(t, ctx, "phone, light")
}

// Opened without the token (a bookmark, the bare address), the page asks
// for it, says so when the gateway refuses what was typed, and works once
// given the right one.
func TestPageAsksForTheToken(t *testing.T) {
	ctx := browser(t)
	g := start(t, gateway.Options{Token: "open-sesame"})
	g.lm("queue", "add", "Behind the token")
	if err := chromedp.Do(ctx, chromedp.Navigate(g.url+"/"), chromedp.WaitVisible("#token-input")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#live", contains("locked"), "locked state")
	if err := chromedp.Do(ctx, chromedp.SendKeys("#token-input", "open-sesam\r")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#token-error", contains("refused"), "a wrong token's message")
	if err := chromedp.Do(ctx, setValue("#token-input", ""), chromedp.SendKeys("#token-input", "open-sesame\r")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#pending", contains("Behind the token"), "list after the token")
	waitText(t, ctx, "#live", contains("live"), "stream with the token")
	g.lm("queue", "add", "Live behind the token")
	waitText(t, ctx, "#pending", contains("Live behind the token"), "live add with the token")
	// The servers view's stream carries the token too.
	if err := chromedp.Do(ctx, chromedp.Click("#tab-servers")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#servers-count", contains("none"), "servers behind the token")
	waitText(t, ctx, "#servers-empty", contains("lm servers add"), "empty servers view")
}

// The URL lm gateway prints carries the token: the page works from it,
// drops it from the address bar and the history, and a reload keeps
// working on the token it kept.
func TestPageTakesTheTokenFromItsURL(t *testing.T) {
	ctx := browser(t)
	g := start(t, gateway.Options{})
	g.lm("queue", "add", "Opened from the printed URL")
	if err := chromedp.Do(ctx, chromedp.Navigate(g.page()), chromedp.WaitVisible("#composer-text")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#pending", contains("Opened from the printed URL"), "the queue")
	waitText(t, ctx, "#live", contains("live"), "stream")
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
	if err != nil || strings.Contains(href, g.opts.Token) || strings.Contains(href, "token") {
		t.Fatalf("the address bar shows %q (%v)", href, err)
	}
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible("#composer-text")); err != nil {
		t.Fatal(err)
	}
	g.lm("queue", "add", "After the reload")
	waitText(t, ctx, "#pending", contains("After the reload"), "the queue after a reload")
	waitText(t, ctx, "#live", contains("live"), "stream after a reload")
	if open, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#token-dialog").open`)); open {
		t.Error("the page asks for the token after a reload")
	}
}

// prefersDark makes the browser report an OS set to the dark theme.
func prefersDark() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		return t.Call(ctx, "Emulation.setEmulatedMedia", map[string]any{
			"features": []map[string]string{{"name": "prefers-color-scheme", "value": "dark"}},
		}, nil)
	})
}

// pageIsDark reports whether the page's ground is dark.
const pageIsDarkJS = `(() => { const m = getComputedStyle(document.documentElement).backgroundColor.match(/[\d.]+/g).map(Number); return m[0] + m[1] + m[2] < 3 * 64 })()`

// The page follows the OS's theme until the person picks one, and keeps
// the pick across reloads.
func TestPageFollowsTheOSTheme(t *testing.T) {
	ctx := browser(t)
	g := start(t, gateway.Options{})
	if err := chromedp.Do(ctx, prefersDark(), chromedp.Navigate(g.page()), chromedp.WaitVisible("#composer-text")); err != nil {
		t.Fatal(err)
	}
	if dark, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](pageIsDarkJS)); !dark {
		t.Fatal("on a dark OS the page is light")
	}
	shot(t, ctx, "desk-os-dark")
	checkContrast(t, ctx, "desk, OS dark")
	// The API page shares the page's tokens.
	if err := chromedp.Do(ctx, chromedp.Navigate(g.url+"/docs"), chromedp.WaitVisible(".docs-route")); err != nil {
		t.Fatal(err)
	}
	if dark, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](pageIsDarkJS)); !dark {
		t.Error("on a dark OS the API page is light")
	}
	shot(t, ctx, "docs-os-dark")
	checkContrast(t, ctx, "API page, OS dark")
	checkFocus(t, ctx, "API page, OS dark")
	if err := chromedp.Do(ctx, chromedp.Navigate(g.page()), chromedp.WaitVisible("#composer-text")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#theme-toggle"), chromedp.Reload(), chromedp.WaitVisible("#composer-text")); err != nil {
		t.Fatal(err)
	}
	if dark, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](pageIsDarkJS)); dark {
		t.Fatal("the light theme picked on a dark OS did not survive a reload")
	}
}

// A gateway that goes away shows as reconnecting; when it is back the page
// is live again and catches up on what changed meanwhile (Last-Event-ID).
func TestPageReconnects(t *testing.T) {
	ctx := browser(t)
	g := start(t, gateway.Options{})
	g.lm("queue", "add", "Before the restart")
	if err := chromedp.Do(ctx, chromedp.Navigate(g.page()), chromedp.WaitVisible("#composer-text")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#live", contains("live"), "stream")
	waitText(t, ctx, "#pending", contains("Before the restart"), "rack")

	g.stop()
	waitText(t, ctx, "#live", contains("reconnecting"), "state with the gateway gone")
	waitText(t, ctx, "#server-state", contains("unreachable"), "server cell with the gateway gone")
	shot(t, ctx, "desk-reconnecting")
	checkContrast(t, ctx, "desk, reconnecting")
	g.lm("queue", "add", "Added while the gateway was down")
	g.lm("queue", "next", "--agent-id", "night-shift")

	g.serve(strings.TrimPrefix(g.url, "http://"))
	waitText(t, ctx, "#live", func(s string) bool { return s == "live" }, "state with the gateway back")
	waitText(t, ctx, "#pending", contains("Added while the gateway was down"), "add missed while away")
	waitText(t, ctx, "#consumed", contains("Before the restart"), "consumption missed while away")
	waitText(t, ctx, "#consumed", contains("night-shift"), "consuming agent missed while away")
}

// shiftableClock makes the page's Date.now run ahead by window.lmClockShift
// milliseconds, so a test can let minutes pass without waiting for them.
func shiftableClock() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		return t.Call(ctx, "Page.addScriptToEvaluateOnNewDocument", map[string]any{
			"source": `(() => { const real = Date.now.bind(Date); window.lmClockShift = 0; Date.now = () => real() + window.lmClockShift; })()`,
		}, nil)
	})
}

// Relative times ("12 s ago") keep up with the clock on a page left open,
// without a reload or any change to the queue.
func TestPageRefreshesRelativeTimes(t *testing.T) {
	ctx := browser(t)
	g := start(t, gateway.Options{})
	g.lm("queue", "add", "Left open all day")
	if err := chromedp.Do(ctx, shiftableClock(), chromedp.Navigate(g.page()), chromedp.WaitVisible("#composer-text")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#pending", contains("s ago"), "a fresh instruction's age")
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { window.lmClockShift = 125000; return true })()`)); err != nil {
		t.Fatal(err)
	}
	// The page refreshes its times every 10 s.
	waitText(t, ctx, "#pending", contains("2 min ago"), "the same instruction two minutes later")
}
