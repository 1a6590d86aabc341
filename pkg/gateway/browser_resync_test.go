package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"lmtool.dev/lm/pkg/gateway"
)

// A page left open on an address where another store's gateway comes up —
// one LM_HOME per project, one default port — must show that store's
// queue, not stay "live" with the old one's items: its Last-Event-ID means
// nothing to the new store.
func TestPageFollowsAnotherStoreOnItsAddress(t *testing.T) {
	ctx := browser(t)
	a := start(t, gateway.Options{})
	a.lm("queue", "add", "Project A's instruction")
	if err := chromedp.Do(ctx, chromedp.Navigate(a.page()), chromedp.WaitVisible("#composer-text")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#live", contains("live"), "stream")
	waitText(t, ctx, "#pending", contains("Project A's instruction"), "project A's rack")

	addr := strings.TrimPrefix(a.url, "http://")
	a.stop()
	waitText(t, ctx, "#live", contains("reconnecting"), "state with A gone")
	// B's store has more events than A's, so A's last event id is one B
	// has issued too: only the store's identity tells them apart.
	b := startAt(t, t.TempDir(), addr, gateway.Options{})
	for i := range 5 {
		b.lm("queue", "add", fmt.Sprintf("Project B's instruction %d", i+1))
	}
	waitText(t, ctx, "#pending", contains("Project B's instruction 5"), "project B's rack")
	if text := waitText(t, ctx, "#pending", contains("Project B's instruction 1"), "project B's rack"); strings.Contains(text, "Project A") {
		t.Fatalf("the page shows project A's instruction on project B's gateway: %q", text)
	}
	waitText(t, ctx, "#live", func(s string) bool { return s == "live" }, "state on B")
	b.lm("queue", "add", "Added on B once the page follows it")
	waitText(t, ctx, "#pending", contains("Added on B once the page follows it"), "a live add on B")
}
