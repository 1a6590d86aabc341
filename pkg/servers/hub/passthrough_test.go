package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"lmtool.dev/lm/pkg/mcpx"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers"
)

// post sends body to url as a client without a session would and returns
// the status and the body of the answer.
func post(t *testing.T, url, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(data)
}

// typedWay is a tools/call body the passthrough leaves to the transport
// (its params carry _meta), else the same as call.
func typedWay(call string) string {
	return strings.Replace(call, `"params":{`, `"params":{"_meta":{},`, 1)
}

// A call that crosses as bytes is answered as the typed path answers it:
// the same result for each shape a tool's result takes, the resource links
// of /mcp namespaced, a tool's failure and an unknown tool alike.
func TestPassthroughAnswersAsTheTypedPath(t *testing.T) {
	h, url := startHub(t, `{"mcpServers": {"shapes": {`+childServer(t, "shapes", nil)+`, "auto_start": true}}}`)
	if s := settled(t, h, "shapes"); s.State != servers.Running {
		t.Fatalf("shapes: %+v", s)
	}
	// What /mcp's hooks (the gateway's call log) see of each call.
	var mu sync.Mutex
	var seen []string
	hooks := &server.Hooks{}
	hooks.AddAfterCallTool(func(_ context.Context, id any, req *mcp.CallToolRequest, result any) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf("%v %s failed=%v", id, req.Params.Name, result.(*mcp.CallToolResult).IsError))
	})
	hooks.AddOnError(func(_ context.Context, id any, method mcp.MCPMethod, _ any, _ error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf("%v %s error", id, method))
	})
	server.WithHooks(hooks)(h.aggregate)
	// hooked takes what the hooks saw once they saw at least n calls (or a
	// minute passed): the passthrough answers before it runs them.
	hooked := func(n int) []string {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
			mu.Lock()
			out := seen
			if len(out) >= n || time.Now().After(deadline) {
				seen = nil
				mu.Unlock()
				return out
			}
			mu.Unlock()
		}
	}
	for _, endpoint := range []struct{ path, prefix string }{{"/mcp/shapes", ""}, {"/mcp", "shapes__"}} {
		for _, params := range []string{
			`{"name":"echo","arguments":{"message":"héllo \u2028 \"quoted\""}}`,
			`{"name":"fail","arguments":{}}`,
			`{"name":"link"}`,
			`{"name":"structured","arguments":{"big":12345678901234567890,"list":[1,"two",null]}}`,
			`{"name":"nosuch","arguments":{}}`,
		} {
			params = strings.Replace(params, `"name":"`, `"name":"`+endpoint.prefix, 1)
			call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + params + `}`
			typedStatus, typed := post(t, url+endpoint.path, typedWay(call), nil)
			typedHooks := hooked(0)
			status, fast := post(t, url+endpoint.path, call, nil)
			fastHooks := hooked(len(typedHooks))
			if status != typedStatus || !sameJSON(t, fast, typed) {
				t.Errorf("%s %s:\npassthrough %d %s\ntyped       %d %s", endpoint.path, params, status, fast, typedStatus, typed)
			}
			if !slices.Equal(fastHooks, typedHooks) || (endpoint.path == "/mcp" && len(fastHooks) != 1) {
				t.Errorf("%s %s: hooks saw %q through the passthrough, %q the typed way", endpoint.path, params, fastHooks, typedHooks)
			}
		}
	}
	// The link's URI is one /mcp can read.
	_, linked := post(t, url+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shapes__link"}}`, nil)
	if !strings.Contains(linked, `"uri":"lm-server://shapes/file:///notes/today.md"`) {
		t.Errorf("the link on /mcp is not namespaced: %s", linked)
	}
	// The id comes back as it was sent, digits and all.
	_, echoed := post(t, url+"/mcp/shapes", `{"jsonrpc":"2.0","id":123456789012345678901,"method":"tools/call","params":{"name":"echo"}}`, nil)
	if !strings.HasPrefix(echoed, `{"jsonrpc":"2.0","id":123456789012345678901,`) {
		t.Errorf("the id is not the caller's: %s", echoed)
	}
	// The activity log has the tool's failure, as it has the typed path's.
	items, _ := h.Activity()
	failures := 0
	for _, a := range items {
		if a.Name == "fail" && a.Outcome == "error" && a.Error == "the disk is full" {
			failures++
		}
	}
	if failures != 4 {
		t.Errorf("want the failure logged for each of 4 calls, got %d: %+v", failures, items)
	}
}

// A request the transport would refuse is refused, and the child never
// sees it: a session id that is not one, a body that is not JSON's
// content type, a protocol version the gateway does not speak.
func TestPassthroughRefusesWhatTheTransportRefuses(t *testing.T) {
	h, url := startHub(t, `{"mcpServers": {"shapes": {`+childServer(t, "shapes", nil)+`, "auto_start": true}}}`)
	if s := settled(t, h, "shapes"); s.State != servers.Running {
		t.Fatalf("shapes: %+v", s)
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"must not arrive"}}}`
	for _, c := range []struct {
		header map[string]string
		want   int
	}{
		{map[string]string{"Mcp-Session-Id": "not-a-session"}, http.StatusNotFound},
		{map[string]string{"Content-Type": "text/plain"}, http.StatusBadRequest},
		{map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, http.StatusBadRequest},
	} {
		for _, path := range []string{"/mcp/shapes", "/mcp"} {
			body := call
			if path == "/mcp" {
				body = strings.Replace(call, `"echo"`, `"shapes__echo"`, 1)
			}
			if status, answer := post(t, url+path, body, c.header); status != c.want {
				t.Errorf("%s with %v: %d %s, want %d", path, c.header, status, answer, c.want)
			}
		}
	}
	items, _ := h.Activity()
	for _, a := range items {
		if a.Method == "tools/call" {
			t.Errorf("a refused call reached the server: %+v", a)
		}
	}
}

func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%v: %s", err, a)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return reflect.DeepEqual(x, y)
}

// A client that cancels a call (notifications/cancelled, in a POST of its
// own) ends it through the passthrough as the typed way does: the caller
// gets the same error, and the child is told to stop.
func TestPassthroughCancelsWhatItsClientCancels(t *testing.T) {
	dir := t.TempDir()
	started, cancelled := filepath.Join(dir, "started"), filepath.Join(dir, "cancelled")
	h, url := startHub(t, `{"settings": {"cb_failure_threshold": 100}, "mcpServers": {"shapes": {`+
		childServer(t, "shapes", map[string]string{"HANG_STARTED": started, "HANG_CANCELLED": cancelled})+`, "auto_start": true}}}`)
	if s := settled(t, h, "shapes"); s.State != servers.Running {
		t.Fatalf("shapes: %+v", s)
	}
	session := map[string]string{"Mcp-Session-Id": "mcp-session-0b5e4a5c-6f0e-4a8e-9d7e-3f1c2b4a5d6e"}
	cancelled9 := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":"changed my mind"}}`
	hangAndCancel := func(path, call string) string {
		os.Remove(started)
		os.Remove(cancelled)
		answer := make(chan string, 1)
		go func() {
			_, body := postQuietly(url+path, call, session)
			answer <- body
		}()
		waitForFile(t, started)
		if status, body := post(t, url+path, cancelled9, session); status != http.StatusAccepted {
			t.Fatalf("notifications/cancelled: %d %s", status, body)
		}
		var body string
		select {
		case body = <-answer:
		case <-time.After(time.Minute):
			t.Fatalf("%s: the cancelled call was not answered", path)
		}
		waitForFile(t, cancelled)
		return body
	}
	for _, endpoint := range []struct{ path, tool string }{{"/mcp/shapes", "hang"}, {"/mcp", "shapes__hang"}} {
		// The session's first call goes the typed way, so the transport
		// knows it; its calls after take the passthrough.
		post(t, url+endpoint.path, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, session)
		call := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"` + endpoint.tool + `"}}`
		fast := hangAndCancel(endpoint.path, call)
		typed := hangAndCancel(endpoint.path, typedWay(call))
		if !strings.Contains(fast, "context canceled") || !sameJSON(t, fast, typed) {
			t.Errorf("%s: a cancelled call answered\npassthrough %s\ntyped       %s", endpoint.path, fast, typed)
		}
	}
}

// postQuietly is post for a goroutine: a failure is the answer.
func postQuietly(url, body string, header map[string]string) (int, string) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(data)
}

// waitForFile waits, a minute at most, until name exists.
func waitForFile(t *testing.T, name string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(name); err == nil {
			return
		}
	}
	t.Fatalf("%s did not appear", name)
}

// Crafted bodies reach no tool the endpoint does not serve: a tool the
// server's filter denies, or another server's on a server's own endpoint,
// whether the body hides it in a duplicate key, a key in other case, a
// batch, _meta, a huge id or another method. The denied tool, had it
// run, would have left its marker.
func TestPassthroughCraftedBodiesReachNoDeniedTool(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "denied-tool-ran")
	h, url := startHub(t, `{"mcpServers": {"plain": {`+childServer(t, "plain", nil)+`, "auto_start": true},
		"shapes": {`+childServer(t, "shapes", map[string]string{"HANG_STARTED": marker})+`, "auto_start": true, "timeout": 5, "tools": {"deny": ["hang"]}}}}`)
	for _, name := range []string{"plain", "shapes"} {
		if s := settled(t, h, name); s.State != servers.Running {
			t.Fatalf("%s: %+v", name, s)
		}
	}
	session := map[string]string{"Mcp-Session-Id": "mcp-session-5d1c7f0e-2b3a-4c5d-8e9f-0a1b2c3d4e5f"}
	// The session's first call goes the typed way; those after, the
	// passthrough: each body is tried both ways.
	post(t, url+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"plain__echo","arguments":{}}}`, session)
	post(t, url+"/mcp/plain", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, session)
	for _, c := range []struct{ path, body string }{
		{"/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shapes__hang"}}`},
		{"/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shapes__echo","name":"shapes__hang"}}`},
		{"/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"Name":"shapes__hang"}}`},
		{"/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shapes__hang","_meta":{"progressToken":1}}}`},
		{"/mcp", `[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shapes__hang"}}]`},
		{"/mcp", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/call","params":{"name":"shapes__hang"}}`},
		{"/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/list","method":"tools/call","params":{"name":"shapes__hang"}}`},
		{"/mcp/shapes", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hang"}}`},
		{"/mcp/plain", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shapes__hang"}}`},
		{"/mcp/plain", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","name":"hang"}}`},
		{"/mcp/plain/tools/call", `{"name":"shapes__hang"}`},
		{"/mcp/shapes/tools/call", `{"name":"hang"}`},
	} {
		status, body := post(t, url+c.path, c.body, session)
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("POST %s %s ran the denied tool: %d %s", c.path, c.body, status, body)
		}
		if strings.Contains(body, `"result"`) && !strings.Contains(body, `"isError":true`) {
			t.Errorf("POST %s %s answered a result: %d %s", c.path, c.body, status, body)
		}
	}
}

// Without a session a call is known by its id alone, and agents number
// their calls from 1: one agent's notifications/cancelled must not end
// another's call of the same id, the passthrough's or the transport's.
// The other's call runs on to its timeout; its own caller's cancellation
// still ends it.
func TestACancellationWithoutSessionEndsOnlyItsCallersCall(t *testing.T) {
	dir := t.TempDir()
	started, cancelled := filepath.Join(dir, "started"), filepath.Join(dir, "cancelled")
	h, _ := startHub(t, `{"settings": {"cb_failure_threshold": 100}, "mcpServers": {"shapes": {`+
		childServer(t, "shapes", map[string]string{"HANG_STARTED": started, "HANG_CANCELLED": cancelled})+`, "auto_start": true, "timeout": 2}}}`)
	if s := settled(t, h, "shapes"); s.State != servers.Running {
		t.Fatalf("shapes: %+v", s)
	}
	// As the gateway mounts /mcp, behind the callers its tokens name.
	sessions := mcpx.Sessions{}
	agg, own := h.Passthrough(sessions, sessions.Server(h.aggregate)), h.Handler(sessions)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller := op.Caller{Role: op.RoleAgent, Name: r.Header.Get("X-Agent")}
		r = r.WithContext(op.WithCaller(r.Context(), caller))
		if r.URL.Path == "/mcp" {
			agg.ServeHTTP(w, r)
			return
		}
		own.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cancel9 := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`
	hang := func(path, call, canceller string) string {
		os.Remove(started)
		answer := make(chan string, 1)
		go func() {
			_, body := postQuietly(srv.URL+path, call, map[string]string{"X-Agent": "victim"})
			answer <- body
		}()
		waitForFile(t, started)
		if status, body := post(t, srv.URL+path, cancel9, map[string]string{"X-Agent": canceller}); status != http.StatusAccepted {
			t.Fatalf("notifications/cancelled from %s: %d %s", canceller, status, body)
		}
		select {
		case body := <-answer:
			return body
		case <-time.After(time.Minute):
			t.Fatalf("%s: the call was not answered", path)
			return ""
		}
	}
	for _, endpoint := range []struct{ path, tool string }{{"/mcp/shapes", "hang"}, {"/mcp", "shapes__hang"}} {
		call := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"` + endpoint.tool + `"}}`
		for _, way := range []struct{ name, call string }{{"passthrough", call}, {"typed", typedWay(call)}} {
			if body := hang(endpoint.path, way.call, "intruder"); strings.Contains(body, "context canceled") || !strings.Contains(body, "within 2s") {
				t.Errorf("%s %s: another agent's cancellation ended the call: %s", endpoint.path, way.name, body)
			}
			if body := hang(endpoint.path, way.call, "victim"); !strings.Contains(body, "context canceled") {
				t.Errorf("%s %s: its own agent's cancellation did not end the call: %s", endpoint.path, way.name, body)
			}
		}
	}
}

// resultText is the first text of a tools/call response's result, and its
// id as written.
func resultText(t *testing.T, body string) (id, text string) {
	t.Helper()
	var res struct {
		ID     json.RawMessage `json:"id"`
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &res); err != nil || len(res.Result.Content) == 0 {
		t.Fatalf("not a tool's result (%v): %.300s", err, body)
	}
	return string(res.ID), res.Result.Content[0].Text
}

// Each caller gets the answer to its own call when the child answers out
// of order, with an answer to an id the hub never sent and a notification
// in between.
func TestPassthroughMatchesAnswersByID(t *testing.T) {
	h, url := startHub(t, `{"mcpServers": {"raw": {`+childServer(t, "raw", nil)+`, "auto_start": true}}}`)
	if s := settled(t, h, "raw"); s.State != servers.Running {
		t.Fatalf("raw: %+v", s)
	}
	c := h.child("raw")
	c.mu.Lock()
	conn := c.session.GetTransport().(*stdioConn)
	c.mu.Unlock()
	for _, endpoint := range []struct{ path, tool string }{{"/mcp/raw", "pair"}, {"/mcp", "raw__pair"}} {
		var wg sync.WaitGroup
		answers := make([]string, 2)
		for i, tag := range []string{"first", "second"} {
			wg.Go(func() {
				_, answers[i] = postQuietly(url+endpoint.path,
					fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"tag":%q}}}`, 7+i, endpoint.tool, tag), nil)
			})
			// The second call is sent once the first waits at the child,
			// so the child answers them in the reverse order.
			for i == 0 && len(conn.pending()) == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		wg.Wait()
		for i, tag := range []string{"first", "second"} {
			if id, text := resultText(t, answers[i]); id != fmt.Sprint(7+i) || text != "pair "+tag {
				t.Errorf("%s: call %d (%s) was answered %s %q", endpoint.path, 7+i, tag, id, text)
			}
		}
	}
}

// pending are the ids of the calls waiting for their answers.
func (c *stdioConn) pending() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Collect(maps.Keys(c.waiting))
}

// A call in progress when its child dies fails then, not at its timeout,
// and the server's next start serves calls again.
func TestPassthroughCallOfADyingChildFails(t *testing.T) {
	h, url := startHub(t, `{"mcpServers": {"raw": {`+childServer(t, "raw", nil)+`, "auto_start": true, "timeout": 3600}}}`)
	for _, endpoint := range []struct{ path, prefix string }{{"/mcp/raw", ""}, {"/mcp", "raw__"}} {
		s := settled(t, h, "raw")
		if s.State != servers.Running {
			t.Fatalf("raw: %+v", s)
		}
		restarts := s.RestartCount
		status, body := post(t, url+endpoint.path, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"`+endpoint.prefix+`die","arguments":{}}}`, nil)
		var res struct {
			ID    int `json:"id"`
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &res); err != nil || status != http.StatusOK || res.ID != 3 || res.Error.Code != mcp.INTERNAL_ERROR ||
			!strings.Contains(res.Error.Message, "server raw") {
			t.Fatalf("%s: a call whose child died answered %d %s", endpoint.path, status, body)
		}
		// The supervisor sees the exit a moment after the call did.
		for deadline := time.Now().Add(time.Minute); h.child("raw").status().RestartCount == restarts && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		if s := settled(t, h, "raw"); s.State != servers.Running || s.RestartCount != restarts+1 {
			t.Fatalf("raw after dying: %+v", s)
		}
		_, body = post(t, url+endpoint.path, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"`+endpoint.prefix+`echo","arguments":{"message":"back"}}}`, nil)
		if _, text := resultText(t, body); text != "Echo: back" {
			t.Errorf("%s: after the restart: %s", endpoint.path, body)
		}
	}
}

// An answer of 10 MiB on one line crosses whole, and arguments laid out on
// several lines reach the child as one message.
func TestPassthroughCarriesLargeAnswersAndLaidOutArguments(t *testing.T) {
	h, url := startHub(t, `{"mcpServers": {"raw": {`+childServer(t, "raw", nil)+`, "auto_start": true}}}`)
	if s := settled(t, h, "raw"); s.State != servers.Running {
		t.Fatalf("raw: %+v", s)
	}
	for _, endpoint := range []struct{ path, prefix string }{{"/mcp/raw", ""}, {"/mcp", "raw__"}} {
		_, body := post(t, url+endpoint.path, `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"`+endpoint.prefix+`big"}}`, nil)
		if id, text := resultText(t, body); id != `"big"` || text != strings.Repeat("x", 10<<20) {
			t.Errorf("%s: the large answer came as %s with %d bytes of text", endpoint.path, id, len(text))
		}
		laidOut := "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 5,\n  \"method\": \"tools/call\",\n  \"params\": {\n    \"name\": \"" + endpoint.prefix +
			"echo\",\n    \"arguments\": {\n      \"message\": \"on\\nmany lines\"\n    }\n  }\n}\n"
		if _, text := resultText(t, func() string { _, b := post(t, url+endpoint.path, laidOut, nil); return b }()); text != "Echo: on\nmany lines" {
			t.Errorf("%s: laid-out arguments answered %q", endpoint.path, text)
		}
	}
	if s := h.child("raw").status(); s.RestartCount != 0 {
		t.Errorf("the child restarted: %+v", s)
	}
}

// An answer that carries "error":null beside its result is the result.
func TestPassthroughReadsANullErrorAsNone(t *testing.T) {
	h, url := startHub(t, `{"mcpServers": {"raw": {`+childServer(t, "raw", nil)+`, "auto_start": true}}}`)
	if s := settled(t, h, "raw"); s.State != servers.Running {
		t.Fatalf("raw: %+v", s)
	}
	_, body := post(t, url+"/mcp/raw", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nullerror","arguments":{}}}`, nil)
	if _, text := resultText(t, body); text != "fine" {
		t.Errorf("an answer with a null error: %s", body)
	}
}

// A child that stops reading its stdin while the hub writes it a call
// larger than the pipe holds is still stopped: the blocked write holds
// nothing the stop needs.
func TestStoppingAChildThatStoppedReading(t *testing.T) {
	h, url := startHub(t, `{"mcpServers": {"raw": {`+childServer(t, "raw", nil)+`, "auto_start": true, "timeout": 3600}}}`)
	if s := settled(t, h, "raw"); s.State != servers.Running {
		t.Fatalf("raw: %+v", s)
	}
	go postQuietly(url+"/mcp/raw", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deaf","arguments":{}}}`, nil)
	time.Sleep(200 * time.Millisecond) // let the child take it and go deaf
	big := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"` + strings.Repeat("x", 1<<20) + `"}}}`
	go postQuietly(url+"/mcp/raw", big, nil)
	time.Sleep(200 * time.Millisecond) // let the big write fill the pipe
	stopped := make(chan struct{})
	go func() { h.child("raw").stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("stopping a child that stopped reading never returned")
	}
}

// A child that stops reading its stdin holds no call past its timeout: the
// call whose write it blocks, and every call queued behind that write,
// fail when their time is up, and neither stays stuck until a stop.
func TestCallsToAChildThatStoppedReadingTimeOut(t *testing.T) {
	h, url := startHub(t, `{"mcpServers": {"raw": {`+childServer(t, "raw", nil)+`, "auto_start": true, "timeout": 1}}}`)
	if s := settled(t, h, "raw"); s.State != servers.Running {
		t.Fatalf("raw: %+v", s)
	}
	postQuietly(url+"/mcp/raw", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deaf","arguments":{}}}`, nil)
	big := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"` + strings.Repeat("x", 1<<20) + `"}}}`
	small := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`
	answered := make(chan string, 2)
	for _, body := range []string{big, small} {
		go func() { _, b := postQuietly(url+"/mcp/raw", body, nil); answered <- b }()
		time.Sleep(200 * time.Millisecond) // the big write fills the pipe first
	}
	for range 2 {
		select {
		case body := <-answered:
			if !strings.Contains(body, `"error"`) && !strings.Contains(body, `"isError":true`) {
				t.Errorf("a call to a child that reads nothing answered %.300s", body)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("a call to a child that stopped reading outlived its 1 s timeout by 20 s")
		}
	}
}

// A child that sends request after request without reading the answers,
// or says again and again that its tools changed, costs the gateway a
// bounded number of goroutines, not one per message.
func TestAChildsFloodOfRequestsIsBounded(t *testing.T) {
	for _, tool := range []string{"flood", "churn"} {
		t.Run(tool, func(t *testing.T) { floodFrom(t, tool) })
	}
}

func floodFrom(t *testing.T, tool string) {
	h, url := startHub(t, `{"mcpServers": {"raw": {`+childServer(t, "raw", nil)+`, "auto_start": true, "timeout": 1}}}`)
	if s := settled(t, h, "raw"); s.State != servers.Running {
		t.Fatalf("raw: %+v", s)
	}
	before := runtime.NumGoroutine()
	go postQuietly(url+"/mcp/raw", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{}}}`, nil)
	most := 0
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		most = max(most, runtime.NumGoroutine()-before)
	}
	if most > 1000 {
		t.Errorf("a child's flood of %s took %d goroutines", tool, most)
	}
}

// A child's answer that is not UTF-8 reaches the caller as the typed path
// would send it, valid UTF-8 with U+FFFD in place of what was not: JSON is
// UTF-8, and a strict client refuses the whole answer otherwise.
func TestPassthroughSendsUTF8Only(t *testing.T) {
	h, url := startHub(t, `{"mcpServers": {"raw": {`+childServer(t, "raw", nil)+`, "auto_start": true}}}`)
	if s := settled(t, h, "raw"); s.State != servers.Running {
		t.Fatalf("raw: %+v", s)
	}
	for _, endpoint := range []struct{ path, prefix string }{{"/mcp/raw", ""}, {"/mcp", "raw__"}} {
		_, body := post(t, url+endpoint.path, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+endpoint.prefix+`latin1","arguments":{}}}`, nil)
		if !utf8.ValidString(body) {
			t.Errorf("%s: the answer is not UTF-8: %q", endpoint.path, body)
		}
		if _, text := resultText(t, body); text != "caf\uFFFD" {
			t.Errorf("%s: the text came as %q", endpoint.path, text)
		}
	}
}
