package gateway_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"lmtool.dev/lm/pkg/gateway"
)

// The Ask view's conversation is kept in the store for the browser's page
// session: a reload or a second tab shows it as it was left, an open
// proposal can still be approved, and Clear forgets it everywhere.
func TestAskThreadSurvivesReloadsAndTabs(t *testing.T) {
	m := newFakeModel(t,
		`{"action":"call","tool":"get-sum","arguments":{"a":40,"b":2},"reason":"adds"}`,
		`{"action":"call","tool":"echo","arguments":{"message":"kept across a reload"},"reason":"repeats"}`,
	)
	g := startIn(t, askHome(t, m), gateway.Options{})
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(g.page()), chromedp.WaitVisible("#composer-text"), chromedp.Click("#tab-ask"),
		chromedp.WaitVisible("#ask-text")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#ask-server", contains("everything"), "the servers")
	if err := chromedp.Do(ctx, selectOption("#ask-server", "everything")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#ask-conn", contains("connected ·"), "connected to everything")
	if err := chromedp.Do(ctx, setValue("#ask-text", "add 40 and 2"), chromedp.Click("#ask-submit")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, ".proposal .tool", contains("get-sum"), "the first proposal")
	click(t, ctx, ".proposal .btn-primary")
	waitText(t, ctx, ".result", contains("The sum of 40 and 2 is 42."), "the first result")
	if err := chromedp.Do(ctx, setValue("#ask-text", "say it back"), chromedp.Click("#ask-submit")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, ".turn:last-child .proposal .tool", contains("echo"), "the second proposal")
	session, err := chromedp.Run(ctx, chromedp.Evaluate[string](`localStorage.getItem("lm.ask.session")`))
	if err != nil || session == "" {
		t.Fatalf("no page session: %q %v", session, err)
	}
	path := "/api/ask/thread/" + session
	waitStored := func(what string, ok func(string) bool) {
		t.Helper()
		for i := 0; ; i++ {
			_, body := g.do("GET", path, "")
			if ok(fmt.Sprint(body["turns"])) {
				return
			}
			if i == 300 {
				t.Fatalf("the stored thread never showed %s: %v", what, body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitStored("the open echo proposal", contains("kept across a reload"))

	// A reload shows both turns as they were left; the open proposal can
	// still be approved, and its result is kept too.
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible("#ask-text")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#ask-thread", contains("The sum of 40 and 2 is 42."), "the first result after a reload")
	waitText(t, ctx, ".turn:first-child .proposal .tag", contains("approved"), "the first verdict after a reload")
	waitText(t, ctx, ".turn:last-child .proposal .tool", contains("echo"), "the open proposal after a reload")
	if hidden, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#ask-empty").hidden`)); !hidden {
		t.Error("the empty-thread note shows beside a kept thread")
	}
	click(t, ctx, ".turn:last-child .proposal .btn-primary")
	waitText(t, ctx, ".turn:last-child .result", contains("Echo: kept across a reload"), "the result of a proposal approved after a reload")
	waitStored("the echo's result", contains("Echo: kept across a reload"))

	// A second tab of the same browser shows the conversation.
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	if err := chromedp.Do(tab, chromedp.Navigate(g.url+"/#ask"), chromedp.WaitVisible("#ask-text")); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, "#ask-thread", contains("Echo: kept across a reload"), "the thread in a second tab")
	waitText(t, tab, "#ask-thread", contains("The sum of 40 and 2 is 42."), "the first turn in a second tab")

	// Clear forgets it: here, in the store, and on the next reload.
	click(t, tab, "#ask-clear")
	waitText(t, tab, "#ask-thread", func(s string) bool { return s == "" }, "the thread after Clear")
	if _, body := g.do("GET", path, ""); fmt.Sprint(body["turns"]) != "[]" {
		t.Errorf("the store still holds the thread after Clear: %v", body)
	}
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible("#ask-text")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#ask-server", contains("everything"), "the servers after Clear and a reload")
	if text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#ask-thread").textContent`)); strings.TrimSpace(text) != "" {
		t.Errorf("a reload after Clear shows %q", text)
	}
}

// The thread's routes keep what the page sends within bounds and refuse
// what is not a thread.
func TestAskThreadRoutes(t *testing.T) {
	g := start(t, gateway.Options{})
	const path = "/api/ask/thread/tab-session-1"
	if code, body := g.do("GET", path, ""); code != 200 || fmt.Sprint(body["turns"]) != "[]" {
		t.Fatalf("a new session's thread = %d %v", code, body)
	}
	if code, body := g.do("PUT", path, `{"turns": [{"request": "one"}, {"request": "two"}]}`); code != 200 || len(body["turns"].([]any)) != 2 {
		t.Fatalf("PUT = %d %v", code, body)
	}
	if _, body := g.do("GET", path, ""); !strings.Contains(fmt.Sprint(body["turns"]), "two") || body["updated_at"] == nil {
		t.Fatalf("GET after PUT: %v", body)
	}
	for _, c := range []struct {
		method, path, body string
		status             int
	}{
		{"PUT", path, `{"turns": ["not an object"]}`, 422},
		{"PUT", path, `{"turns": {"request": "x"}}`, 400},
		{"PUT", path, `{}`, 400},
		{"GET", "/api/ask/thread/short", "", 422},
		{"PUT", "/api/ask/thread/has%20a%20space", `{"turns": []}`, 422},
	} {
		if code, body := g.do(c.method, c.path, c.body); code != c.status || body["success"] != false {
			t.Errorf("%s %s %s = %d %v, want %d", c.method, c.path, c.body, code, body, c.status)
		}
	}
	if _, body := g.do("GET", path, ""); len(body["turns"].([]any)) != 2 {
		t.Errorf("a refused PUT changed the thread: %v", body)
	}
	// Past the bound, the oldest turns go.
	big := `{"request": "` + strings.Repeat("x", 300<<10) + `"}`
	code, body := g.do("PUT", path, `{"turns": [{"request": "oldest"}, `+big+`, `+big+`, `+big+`, `+big+`]}`)
	if code != 200 || body["dropped"] != 2.0 || len(body["turns"].([]any)) != 3 || strings.Contains(fmt.Sprint(body["turns"]), "oldest") {
		t.Errorf("an oversized thread: %d dropped=%v turns=%d", code, body["dropped"], len(body["turns"].([]any)))
	}
	if code, _ := g.do("DELETE", path, ""); code != 204 {
		t.Errorf("DELETE = %d", code)
	}
	if _, body := g.do("GET", path, ""); fmt.Sprint(body["turns"]) != "[]" {
		t.Errorf("after DELETE: %v", body)
	}
}
