package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"lmtool.dev/lm/pkg/gateway"
	"lmtool.dev/lm/pkg/npmtest"
	"lmtool.dev/lm/pkg/servers"
)

// fakeModel is a model on loopback speaking Ollama's /api/chat: each
// request gets the next scripted reply; the messages it was sent are kept.
type fakeModel struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []string
	messages [][]string // per request, "role: content"
}

func newFakeModel(t *testing.T, replies ...string) *fakeModel {
	t.Helper()
	m := &fakeModel{replies: replies}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		m.mu.Lock()
		defer m.mu.Unlock()
		var msgs []string
		for _, msg := range req.Messages {
			msgs = append(msgs, msg.Role+": "+msg.Content)
		}
		m.messages = append(m.messages, msgs)
		if len(m.replies) == 0 {
			t.Errorf("model request %d after the script ended", len(m.messages))
			http.Error(w, `{"error":"the script ended"}`, http.StatusBadRequest)
			return
		}
		reply := m.replies[0]
		m.replies = m.replies[1:]
		json.NewEncoder(w).Encode(map[string]any{"message": map[string]any{"role": "assistant", "content": reply}, "done": true})
	}))
	t.Cleanup(m.Close)
	return m
}

// lastRequest is what the model was sent last, one "role: content" a line.
func (m *fakeModel) lastRequest() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.messages) == 0 {
		return ""
	}
	return strings.Join(m.messages[len(m.messages)-1], "\n")
}

// askHome is an LM_HOME with server-everything configured as "everything",
// a server that cannot start as "broken", and, when m is not nil, the
// model m.
func askHome(t *testing.T, m *fakeModel) string {
	t.Helper()
	everything := npmtest.Skip(t, "mcp-server-everything")
	home := t.TempDir()
	cfg := `{"mcpServers": {
		"everything": {"command": "` + everything + `", "description": "The MCP reference server"},
		"broken": {"command": "` + filepath.Join(home, "no-such-server") + `", "description": "A server whose program is gone"}}}`
	if err := os.WriteFile(servers.Path(home), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if m != nil {
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(fmt.Sprintf("[model]\nmodel = \"tiny\"\nurl = %q\n", m.URL)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

func TestAskRoutes(t *testing.T) {
	m := newFakeModel(t,
		`{"action":"call","tool":"get-sum","arguments":{"a":40,"b":1},"reason":"the tool adds numbers"}`,
		`{"action":"call","tool":"echo","arguments":{"message":"42"},"reason":"say the sum"}`,
	)
	g := startIn(t, askHome(t, m), gateway.Options{})

	code, body := g.do("GET", "/api/servers", "")
	if code != 200 || !strings.Contains(jsonText(body), `"name":"everything"`) {
		t.Fatalf("GET /api/servers = %d %v", code, body)
	}
	code, body = g.do("GET", "/api/servers/everything/tools", "")
	if code != 200 || !strings.Contains(jsonText(body), `"name":"get-sum"`) {
		t.Fatalf("GET /api/servers/everything/tools = %d %v", code, body)
	}
	code, body = g.do("GET", "/api/servers/broken/tools", "")
	if code != http.StatusServiceUnavailable || !strings.Contains(body["error"].(string), "cannot connect to broken") {
		t.Errorf("tools of a server that cannot start = %d %v", code, body)
	}
	code, body = g.do("GET", "/api/servers/nothing/tools", "")
	if code != http.StatusNotFound {
		t.Errorf("tools of an unknown server = %d %v", code, body)
	}

	// The proposal: nothing runs.
	code, body = g.do("POST", "/api/ask", `{"server":"everything","request":"add 40 and 2","dry_run":true}`)
	if code != 200 || body["stopped"] != "dry_run" {
		t.Fatalf("POST /api/ask = %d %v", code, body)
	}
	step := body["steps"].([]any)[0].(map[string]any)
	if p := step["proposal"].(map[string]any); p["tool"] != "get-sum" || p["reason"] != "the tool adds numbers" || step["approval"] != "proposed" {
		t.Errorf("proposal %v", step)
	}
	if code, body := g.do("POST", "/api/ask", `{"server":"everything","request":"add 40 and 2"}`); code != http.StatusForbidden ||
		!strings.Contains(body["suggestion"].(string), "dry_run") {
		t.Errorf("ask without dry_run = %d %v", code, body)
	}
	// An approval in the request is no person's: refused, nothing runs.
	if code, body := g.do("POST", "/api/ask", `{"server":"everything","request":"add 40 and 2","yes":true}`); code != http.StatusForbidden ||
		!strings.Contains(body["error"].(string), "only proposes") {
		t.Errorf("ask with yes = %d %v", code, body)
	}
	if _, body := g.do("GET", "/api/history", ""); len(body["items"].([]any)) != 0 {
		t.Errorf("a refused ask ran a call: %v", body)
	}

	// The person edits the arguments and approves: the call runs, recorded
	// as approved. Invalid arguments are refused before anything runs.
	code, body = g.do("POST", "/api/call", `{"server":"everything","tool":"get-sum","arguments":{"a":40,"b":"two"}}`)
	if code != http.StatusUnprocessableEntity || !strings.Contains(body["error"].(string), `"b" must be number`) {
		t.Errorf("call with invalid arguments = %d %v", code, body)
	}
	code, body = g.do("POST", "/api/call", `{"server":"everything","tool":"get-sum","arguments":{"a":40,"b":2}}`)
	if code != 200 || !strings.Contains(jsonText(body["result"]), "The sum of 40 and 2 is 42.") || body["history_id"] == "" {
		t.Fatalf("POST /api/call = %d %v", code, body)
	}
	code, body = g.do("POST", "/api/call", `{"server":"everything","tool":"gzip-file-as-resource","arguments":{"name":"x","data":"ftp://x"}}`)
	if code != http.StatusBadGateway || body["error_category"] != "tool_error" {
		t.Errorf("a tool that reports an error = %d %v", code, body)
	}
	// Only configured servers and URLs: never a program from the page.
	code, body = g.do("POST", "/api/call", `{"command":["/bin/sh","-c","touch pwned"],"tool":"echo","arguments":{"message":"x"}}`)
	if code != http.StatusForbidden || !strings.Contains(body["error"].(string), "command line") {
		t.Errorf("a stdio command from the page = %d %v", code, body)
	}

	// The follow-up carries the earlier turn to the model.
	followUp := `{"server":"everything","request":"now echo it","dry_run":true,"previous":[{"request":"add 40 and 2","steps":[
		{"proposal":{"action":"call","tool":"get-sum","arguments":{"a":40,"b":1}},"approval":"edited","arguments":{"a":40,"b":2},"result":"The sum of 40 and 2 is 42."}]}]}`
	if code, body := g.do("POST", "/api/ask", followUp); code != 200 {
		t.Fatalf("follow-up = %d %v", code, body)
	}
	if sent := m.lastRequest(); !strings.Contains(sent, `user: The result of get-sum: "The sum of 40 and 2 is 42."`) || !strings.HasSuffix(sent, "user: now echo it") {
		t.Errorf("the follow-up sent the model:\n%s", sent)
	}

	code, body = g.do("GET", "/api/history?target=everything", "")
	items, _ := body["items"].([]any)
	if code != 200 || len(items) != 2 {
		t.Fatalf("GET /api/history = %d %v", code, body)
	}
	for _, it := range items {
		if r := it.(map[string]any); r["approval"] != "approved" {
			t.Errorf("a call approved on the page is recorded as %v", r["approval"])
		}
	}

	code, body = g.do("GET", "/openapi.json", "")
	paths, _ := body["paths"].(map[string]any)
	for _, p := range []string{"/api/servers", "/api/servers/{server}/tools", "/api/ask", "/api/call", "/api/history"} {
		if paths[p] == nil {
			t.Errorf("/openapi.json does not describe %s", p)
		}
	}
}

func TestAskRouteWithoutAModel(t *testing.T) {
	g := startIn(t, askHome(t, nil), gateway.Options{})
	code, body := g.do("POST", "/api/ask", `{"server":"everything","request":"add 40 and 2","dry_run":true}`)
	if code != http.StatusServiceUnavailable || body["error_category"] != "model_unavailable" ||
		!strings.Contains(body["suggestion"].(string), "LM_MODEL") || !strings.Contains(body["suggestion"].(string), "[model]") {
		t.Errorf("ask without a model = %d %v", code, body)
	}
}

func jsonText(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// selectOption picks a <select>'s option as a person would.
func selectOption(sel, value string) chromedp.Action[chromedp.Void] {
	v, _ := json.Marshal(value)
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](`(() => { const e = document.querySelector(`+quote(sel)+`); e.value = `+string(v)+`; e.dispatchEvent(new Event("change", {bubbles: true})); return true })()`)(ctx, t)
		return err
	})
}

func TestAskViewInBrowser(t *testing.T) {
	m := newFakeModel(t,
		`{"action":"call","tool":"get-sum","arguments":{"a":40,"b":1},"reason":"get-sum adds two numbers"}`,
		`{"action":"done","answer":"40 and 2 make 42."}`,
		`{"action":"call","tool":"echo","arguments":{"message":"hello <b>there</b>"},"reason":"echo repeats a message"}`,
	)
	g := startIn(t, askHome(t, m), gateway.Options{})
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(g.page()), chromedp.WaitVisible("#composer-text"),
		chromedp.Click("body", chromedp.NodeVisible), chromedp.KeyEvent("a")); err != nil {
		t.Fatal(err)
	}
	if hash, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash`)); hash != "#ask" {
		t.Fatalf("a went to %q", hash)
	}
	if focused, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`)); focused != "ask-text" {
		t.Errorf("a focused %q, not the request", focused)
	}
	// The first server cannot start: the page says so.
	waitText(t, ctx, "#ask-conn", contains("cannot connect to broken"), "a server that is down")
	if err := chromedp.Do(ctx, selectOption("#ask-server", "everything")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#ask-conn", contains("connected ·"), "connected to everything")
	waitText(t, ctx, "#ask-tools", contains("get-sum"), "the tools")

	// Ask with the keyboard; the proposal shows with the model's reason.
	if err := chromedp.Do(ctx, setValue("#ask-text", ""), chromedp.SendKeys("#ask-text", "add 40 and 2"),
		chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl))); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, ".proposal .tool", contains("get-sum"), "the proposal")
	waitText(t, ctx, ".proposal .reason", contains("get-sum adds two numbers"), "the model's reason")
	waitText(t, ctx, ".proposal .json", contains(`"b": 1`), "the proposed arguments")
	if focused, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.className`)); !strings.Contains(focused, "proposal") {
		t.Errorf("the focus is on %q, not the proposal", focused)
	}

	// Edit: JSON that does not parse, then arguments the tool's schema
	// refuses, are shown inline and nothing runs; then the fix runs.
	click(t, ctx, ".proposal .card-actions button:nth-of-type(2)")
	for _, tc := range []struct{ args, want string }{
		{`{"a": 40, "b": 2`, "not valid JSON"},
		{`{"a": 40, "b": "two"}`, `"b" must be number`},
	} {
		t.Run(tc.args, func(t *testing.T) {
			if err := chromedp.Do(ctx, setValue(".proposal textarea", tc.args)); err != nil {
				t.Fatal(err)
			}
			click(t, ctx, ".proposal .btn-primary")
			waitText(t, ctx, ".proposal .form-error", contains(tc.want), "the invalid edit's error")
		})
	}
	shot(t, ctx, "ask-edit-light")
	checkContrast(t, ctx, "ask, editing, light")
	if err := chromedp.Do(ctx, setValue(".proposal textarea", `{"a": 40, "b": 2}`)); err != nil {
		t.Fatal(err)
	}
	click(t, ctx, ".proposal .btn-primary")
	waitText(t, ctx, ".result", contains("The sum of 40 and 2 is 42."), "the result")
	waitText(t, ctx, ".proposal .tag", contains("edited"), "the verdict")
	waitText(t, ctx, "#ask-history", contains("get-sum"), "the call in the recent calls")

	// Ask again with the result: the model is sent what ran.
	click(t, ctx, ".result .card-actions button")
	waitText(t, ctx, "#ask-followup", contains("the result of get-sum"), "the follow-up")
	click(t, ctx, "#ask-submit")
	waitText(t, ctx, ".bubble.answer", contains("40 and 2 make 42."), "the model's answer")
	if sent := m.lastRequest(); !strings.Contains(sent, `I changed the arguments before running the call: {"a":40,"b":2}`) ||
		!strings.Contains(sent, "The result of get-sum") {
		t.Errorf("the follow-up sent the model:\n%s", sent)
	}

	// A new request, rejected from the keyboard: nothing runs. What the
	// model wrote is shown as text.
	if err := chromedp.Do(ctx, setValue("#ask-text", "say hello"), chromedp.Click("#ask-submit")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, ".turn:last-child .proposal .tool", contains("echo"), "the second proposal")
	waitText(t, ctx, ".turn:last-child .proposal .json", contains("<b>there</b>"), "markup from the model, as text")
	if err := chromedp.Do(ctx, chromedp.KeyEvent("n")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, ".turn:last-child .proposal", contains("Rejected: nothing ran."), "the rejection")
	if focused, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`)); focused != "ask-text" {
		t.Errorf("after a rejection the focus is on %q, not the request", focused)
	}
	// CDP types the key's character after the keydown the page handled,
	// which a real browser would not.
	if err := chromedp.Do(ctx, setValue("#ask-text", "")); err != nil {
		t.Fatal(err)
	}
	code, body := g.do("GET", "/api/history", "")
	if items := body["items"].([]any); code != 200 || len(items) != 1 || items[0].(map[string]any)["approval"] != "approved" {
		t.Errorf("history after an edited call and a rejected one: %v", body)
	}

	shot(t, ctx, "ask-light")
	checkContrast(t, ctx, "ask, light")
	checkFocus(t, ctx, "ask, light")
	if err := chromedp.Do(ctx, chromedp.Click("#theme-toggle")); err != nil {
		t.Fatal(err)
	}
	shot(t, ctx, "ask-dark")
	checkContrast(t, ctx, "ask, dark")
	checkFocus(t, ctx, "ask, dark")
	onPhone(t, ctx, "the Ask view")
	shot(t, ctx, "ask-phone-dark")
	checkContrast(t, ctx, "ask, phone, dark")
	chromedp.Do(ctx, chromedp.Click("#theme-toggle"))
	shot(t, ctx, "ask-phone-light")
	checkContrast(t, ctx, "ask, phone, light")

	// The chosen server is remembered.
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#ask-conn", contains("connected ·"), "connected after a reload")
	if v, _ := chromedp.Run(ctx, chromedp.Value("#ask-server")); v != "everything" {
		t.Errorf("after a reload the server is %q", v)
	}
}

func TestAskViewWithoutAModel(t *testing.T) {
	g := startIn(t, askHome(t, nil), gateway.Options{})
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(g.page()), showView("#ask"), chromedp.WaitVisible("#ask-text"),
		setValue("#ask-text", "add 40 and 2"), chromedp.Click("#ask-submit")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, ".card-error", contains("No model is configured"), "the missing model")
	waitText(t, ctx, ".card-error .suggestion", contains("LM_MODEL"), "the setting to add")
	if v, _ := chromedp.Run(ctx, chromedp.Value("#ask-text")); v != "add 40 and 2" {
		t.Errorf("the request to send again is %q", v)
	}
	shot(t, ctx, "ask-no-model")
	checkContrast(t, ctx, "ask, no model")
}

// TestAskViewStops stops waiting twice: for the model, whose request the
// gateway then abandons, and for a long call, which is cancelled and still
// recorded, since the server may have acted.
func TestAskViewStops(t *testing.T) {
	modelAsked, modelGaveUp := make(chan struct{}), make(chan struct{})
	var requests atomic.Int32
	m := &fakeModel{Server: httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Only a request read to its end lets the server notice the
		// client going away.
		io.Copy(io.Discard, r.Body)
		if requests.Add(1) == 1 {
			close(modelAsked)
			<-r.Context().Done() // the first request hangs until abandoned
			close(modelGaveUp)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"done": true, "message": map[string]any{"role": "assistant",
			"content": `{"action":"call","tool":"trigger-long-running-operation","arguments":{"duration":60,"steps":60},"reason":"it takes a minute"}`}})
	}))}
	t.Cleanup(m.Close)
	g := startIn(t, askHome(t, m), gateway.Options{})
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(g.page()), showView("#ask"), chromedp.WaitVisible("#ask-text"), selectOption("#ask-server", "everything")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#ask-conn", contains("connected ·"), "connected to everything")
	if err := chromedp.Do(ctx, setValue("#ask-text", "take your time"), chromedp.Click("#ask-submit")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-modelAsked:
	case <-time.After(20 * time.Second):
		t.Fatal("the model was never asked")
	}
	checkContrast(t, ctx, "ask, the model thinking")
	click(t, ctx, ".thinking-row button")
	waitText(t, ctx, ".turn .note", contains("Stopped: nothing was proposed"), "the stopped request")
	select {
	case <-modelGaveUp:
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway kept waiting for the model after the page stopped")
	}

	if err := chromedp.Do(ctx, setValue("#ask-text", "take your time"), chromedp.Click("#ask-submit")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, ".proposal .tool", contains("trigger-long-running-operation"), "the long call's proposal")
	// Stopping while the gateway still connects to the server runs
	// nothing and records nothing; the call stays open to approve again,
	// each time waiting longer before stopping, until it was running.
	for wait := time.Second; ; wait *= 2 {
		click(t, ctx, ".proposal .btn-primary")
		time.Sleep(wait)
		click(t, ctx, ".proposal .card-actions button:last-of-type")
		waitText(t, ctx, ".proposal .form-error", contains("Stopped waiting"), "the stopped call")
		if recorded(t, g) {
			return
		}
		if wait > 8*time.Second {
			t.Fatal("a call stopped while it ran is not recorded as cancelled")
		}
	}
}

// recorded reports whether the history holds one cancelled call, waiting a
// little for the gateway to notice the page went away.
func recorded(t *testing.T, g *gw) bool {
	for range 20 {
		_, body := g.do("GET", "/api/history", "")
		items, _ := body["items"].([]any)
		if len(items) > 0 {
			if len(items) != 1 || items[0].(map[string]any)["outcome"] != "cancelled" {
				t.Fatalf("after stopping a running call the history is %v", body)
			}
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}
