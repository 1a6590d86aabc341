package gateway_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"lmtool.dev/lm/pkg/gateway"
)

// The composer's complaint about an empty instruction answers that one
// attempt: a later action that works clears it.
func TestPageComposerErrorClearsAfterAnotherAction(t *testing.T) {
	ctx := browser(t)
	g := start(t, gateway.Options{})
	g.lm("queue", "add", "Already queued")
	if err := chromedp.Do(ctx, chromedp.Navigate(g.page()), chromedp.WaitVisible("#composer-text")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#pending", contains("Already queued"), "rack")
	if err := chromedp.Do(ctx, setValue("#composer-text", "   "), chromedp.Click(`#composer button[type="submit"]`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#composer-error", contains("Write an instruction first."), "the empty composer's complaint")
	if err := chromedp.Do(ctx,
		chromedp.Click(`#pending li:first-child button[aria-label="Edit"]`),
		chromedp.WaitVisible(`#pending li:first-child textarea`),
		setValue(`#pending li:first-child textarea`, "Queued, then edited"),
		chromedp.Click(`#pending li:first-child .btn-primary`),
	); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#pending li:first-child", contains("Queued, then edited"), "edit")
	waitText(t, ctx, "#composer-error", func(s string) bool { return s == "" }, "the complaint after a successful edit")
}

// At phone width the rail still shows the Server cell, and an agent's
// whole name.
func TestPageRailOnAPhone(t *testing.T) {
	ctx := browser(t)
	g := start(t, gateway.Options{})
	const agent = "racer-on-a-rather-long-agent-name"
	g.lm("queue", "next", "--agent-id", agent)
	if err := chromedp.Do(ctx, chromedp.Navigate(g.page()), chromedp.WaitVisible("#composer-text")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#agent-state", contains(agent), "agent cell")
	onPhone(t, ctx, "the desk")
	shot(t, ctx, "phone-rail")
	for _, sel := range []string{"#server-state", "#agent-state", "#pending-count"} {
		js := `(() => { const e = document.querySelector(` + quote(sel) + `); const r = e.getBoundingClientRect();
			return e.offsetParent !== null && r.width > 0 && r.left >= 0 && r.right <= ` + strconv.Itoa(phoneWidth) + ` && e.scrollWidth <= Math.ceil(r.width) })()`
		if shown, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err != nil || !shown {
			t.Errorf("%s is hidden, outside the phone's width or cut (%v)", sel, err)
		}
	}
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#agent-state").innerText`))
	if !strings.Contains(strings.ReplaceAll(text, "\n", ""), agent) {
		t.Errorf("the agent cell shows %q", text)
	}
	checkContrast(t, ctx, "phone rail")
}
