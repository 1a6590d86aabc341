package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/npmtest"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers/client"
	"lmtool.dev/lm/pkg/testkit"
)

// everything is server-everything's executable; the test skips only when
// it cannot be installed and LM_REQUIRE_NODE is not set.
func everything(t *testing.T) string {
	t.Helper()
	return npmtest.Skip(t, "mcp-server-everything")
}

// newEnv is the person's environment: on lm's command line, or else on the
// gateway's page (no terminal to ask on).
func newEnv(t *testing.T, commandLine bool) *op.Env {
	env := testkit.Env(t)
	env.Environ, env.Caller = os.Environ(), op.Caller{Role: op.RolePerson}
	if commandLine {
		env.Caller = op.Person()
	}
	return env
}

// httpServer runs server-everything in streamable HTTP mode on port and
// returns a function that kills it.
func httpServer(t *testing.T, bin string, port int) (stop func()) {
	t.Helper()
	return npmtest.Serve(t, bin, "streamableHttp", port)
}

// call runs an operation by tool name with a JSON input.
func call(t *testing.T, env *op.Env, tool, input string) (any, error) {
	t.Helper()
	for _, o := range client.Ops() {
		if o.Info().Name == tool {
			return o.Call(context.Background(), env, json.RawMessage(input))
		}
	}
	t.Fatalf("no operation %s", tool)
	return nil, nil
}

func jsonOf(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

func TestOverStdioAndHTTP(t *testing.T) {
	bin := everything(t)
	port := testkit.FreePort(t)
	httpServer(t, bin, port)
	targets := map[string]string{
		"stdio": fmt.Sprintf(`"command":[%q]`, bin),
		"http":  fmt.Sprintf(`"url":"http://127.0.0.1:%d/mcp"`, port),
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			env := newEnv(t, true)
			for _, tc := range []struct{ tool, input, want string }{
				{"servers_info", `{` + target + `}`, `"name":"mcp-servers/everything"`},
				{"servers_tools", `{` + target + `}`, `"name":"get-sum"`},
				{"servers_resources", `{` + target + `}`, `"templates":[{`},
				{"servers_prompts", `{` + target + `}`, `"prompts":[{`},
				{"servers_ping", `{` + target + `}`, `"ok":true`},
				{"servers_call", `{` + target + `,"tool":"echo","arguments":{"message":"hi"}}`, `Echo: hi`},
				{"servers_call", `{` + target + `,"tool":"get-sum","arg":["a=1","b=2"]}`, `The sum of 1 and 2 is 3.`},
				{"servers_call", `{` + target + `,"tool":"get-structured-content","json":"{\"location\":\"Chicago\"}"}`, `"result":{"conditions"`},
			} {
				out, err := call(t, env, tc.tool, tc.input)
				if err != nil || !strings.Contains(jsonOf(out), tc.want) {
					t.Errorf("%s %s: %v %s, want %s", tc.tool, tc.input, err, jsonOf(out), tc.want)
				}
			}
			if name == "http" {
				out, _ := call(t, env, "servers_info", `{`+target+`}`)
				if tr := out.(client.InfoOutput).Transport; tr != "streamable-http" {
					t.Errorf("transport %q", tr)
				}
			}
			hist, err := call(t, env, "servers_history", `{}`)
			if err != nil || len(hist.(client.HistoryOutput).Items) != 3 || hist.(client.HistoryOutput).Items[0].Approval != client.Approved {
				t.Errorf("history after three calls: %v %s", err, jsonOf(hist))
			}
		})
	}
}

func TestCallErrors(t *testing.T) {
	bin := everything(t)
	env := newEnv(t, true)
	target := fmt.Sprintf(`"command":[%q]`, bin)
	for _, tc := range []struct {
		input string
		kind  op.Kind
		msg   string
	}{
		{`{` + target + `,"tool":"get-sum","arguments":{"a":1}}`, op.KindInvalid, `missing required argument "b" (number: Second number)`},
		{`{` + target + `,"tool":"get-sum","arguments":{"a":"one","b":2}}`, op.KindInvalid, `argument "a" must be number, got string`},
		{`{` + target + `,"tool":"get-sum","arg":["a=one"]}`, op.KindInvalid, `--arg a: "one" is not a number`},
		{`{` + target + `,"tool":"get-structured-content","arguments":{"location":"Paris"}}`, op.KindInvalid, `location`},
		{`{` + target + `,"tool":"get-sum","json":"[1]"}`, op.KindInvalid, `not a JSON object`},
		{`{` + target + `,"tool":"nope"}`, op.KindNotFound, `has no tool "nope"`},
		{`{` + target + `,"tool":"gzip-file-as-resource","arguments":{"name":"x","data":"ftp://x"}}`, op.KindRemote, `Unsupported URL protocol`},
		{`{"tool":"echo"}`, op.KindInvalid, `no server given`},
		{`{"server":"mine","tool":"echo"}`, op.KindNotFound, `no server named "mine" in `},
		{`{"url":"ftp://x","tool":"echo"}`, op.KindInvalid, `not an http or https URL`},
		{`{"url":"http://127.0.0.1:1/mcp","header":["Bad Name: x"],"tool":"echo"}`, op.KindInvalid, `header name`},
		{`{"url":"http://127.0.0.1:1/mcp","tool":"echo"}`, op.KindUnavailable, `cannot connect`},
	} {
		_, err := call(t, env, "servers_call", tc.input)
		if err == nil || op.KindOf(err) != tc.kind || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: got %v (kind %d), want kind %d with %q", tc.input, err, op.KindOf(err), tc.kind, tc.msg)
		}
	}
	// only the tool error ran, so only it is in the history
	hist, _ := call(t, env, "servers_history", `{}`)
	if items := hist.(client.HistoryOutput).Items; len(items) != 1 || items[0].Outcome != client.OutcomeToolError {
		t.Errorf("history: %s", jsonOf(hist))
	}
	// over MCP or HTTP a stdio command is refused before anything starts
	if _, err := call(t, newEnv(t, false), "servers_call", `{`+target+`,"tool":"echo"}`); op.KindOf(err) != op.KindDenied {
		t.Errorf("stdio command from an agent: %v", err)
	}
}

func TestReconnectsAfterTheServerRestarts(t *testing.T) {
	bin := everything(t)
	port := testkit.FreePort(t)
	stop := httpServer(t, bin, port)
	status := &testkit.Buffer{}
	target := client.Target{URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)}
	s, err := client.Connect(context.Background(), target, client.Options{Backoff: 100 * time.Millisecond, Attempts: 5, Status: status, Routine: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tool, err := s.Tool(context.Background(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	httpServer(t, bin, port) // a new process: the old session id is unknown to it
	res, err := s.CallTool(context.Background(), tool, map[string]any{"message": "again"}, nil)
	if err != nil || !strings.Contains(jsonOf(res), "Echo: again") {
		t.Fatalf("call after restart: %v %s\nstates:\n%s", err, jsonOf(res), status)
	}
	for _, want := range []string{": connecting\n", ": connected: ", ": disconnected: ", "attempt 1 of 5"} {
		if !strings.Contains(status.String(), want) {
			t.Errorf("state lines lack %q:\n%s", want, status)
		}
	}
}

func TestGivesUpAndHeartbeatFindsADeadServer(t *testing.T) {
	bin := everything(t)
	port := testkit.FreePort(t)
	stop := httpServer(t, bin, port)
	status := &testkit.Buffer{}
	target := client.Target{URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)}
	// The default schedule is 1, 2, 4, 8 and 16 s; the test keeps its
	// shape at a hundredth of the scale.
	if o := client.OptionsFromEnv(&op.Env{}); o.Backoff != time.Second || o.Attempts != 5 {
		t.Fatalf("default reconnect schedule: first delay %s, %d attempts", o.Backoff, o.Attempts)
	}
	// The caller's environment overrides it, not the process's.
	if o := client.OptionsFromEnv(&op.Env{Environ: []string{"LM_RECONNECT_BACKOFF=3s"}}); o.Backoff != 3*time.Second {
		t.Fatalf("LM_RECONNECT_BACKOFF=3s in the caller's environment: first delay %s", o.Backoff)
	}
	s, err := client.Connect(context.Background(), target, client.Options{Backoff: 10 * time.Millisecond, Heartbeat: 50 * time.Millisecond, Status: status, Routine: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = s.Heartbeat(ctx)
	if err == nil || op.KindOf(err) != op.KindUnavailable || !strings.Contains(err.Error(), "gave up reconnecting") || !strings.Contains(err.Error(), "after 5 attempts") {
		t.Fatalf("heartbeat on a dead server: %v\nstates:\n%s", err, status)
	}
	if hint := op.EnvelopeOf(err).Suggestion; !strings.Contains(hint, "start the server again") {
		t.Errorf("giving up says what to do: %q", hint)
	}
	for i, delay := range []string{"10ms", "20ms", "40ms", "80ms", "160ms"} {
		if want := fmt.Sprintf(": connecting: attempt %d of 5 in %s\n", i+1, delay); !strings.Contains(status.String(), want) {
			t.Errorf("state lines lack %q:\n%s", want, status)
		}
	}
	if n := strings.Count(status.String(), ": error: "); n != 5 {
		t.Errorf("%d error lines for 5 attempts:\n%s", n, status)
	}
}

// TestADroppedSSEStreamEndsTheWait: a server that dies while a call waits
// for its answer on the legacy SSE stream fails the call as a lost
// connection at once (and the session tries to reconnect), instead of after
// the transport's 60 s response timeout, which the test's deadline would
// hit first.
func TestADroppedSSEStreamEndsTheWait(t *testing.T) {
	bin := everything(t)
	port := testkit.FreePort(t)
	stop := npmtest.Serve(t, bin, "sse", port)
	status := &testkit.Buffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, client.Target{URL: fmt.Sprintf("http://127.0.0.1:%d/sse", port)},
		client.Options{Backoff: 10 * time.Millisecond, Attempts: 1, Status: status, Routine: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Transport() != "sse" {
		t.Fatalf("connected over %s, not the legacy SSE transport", s.Transport())
	}
	tool, err := s.Tool(ctx, "trigger-long-running-operation")
	if err != nil {
		t.Fatal(err)
	}
	running := make(chan struct{})
	var once sync.Once
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx, tool, map[string]any{"duration": 50, "steps": 50}, func(client.Progress) { once.Do(func() { close(running) }) })
		errc <- err
	}()
	select {
	case <-running:
	case err := <-errc:
		t.Fatalf("the call ended before it ran: %v", err)
	}
	stop()
	err = <-errc
	if ctx.Err() != nil || op.KindOf(err) != op.KindUnavailable {
		t.Fatalf("call on a dropped SSE stream: %v (deadline passed: %v)\nstates:\n%s", err, ctx.Err() != nil, status)
	}
	if !strings.Contains(status.String(), "the SSE stream ended") {
		t.Errorf("the drop is not reported:\n%s", status)
	}
}

func TestFavouritesAndRerun(t *testing.T) {
	bin := everything(t)
	env := newEnv(t, true)
	target := fmt.Sprintf(`"command":[%q]`, bin)
	if _, err := call(t, env, "servers_fav_add", `{"name":"hi",`+target+`,"tool":"echo","json":"{\"message\":\"fav\"}"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, env, "servers_fav_add", `{"name":"hi",`+target+`,"tool":"echo","json":"{\"message\":\"x\"}"}`); op.KindOf(err) != op.KindConflict {
		t.Errorf("a second favourite of the same name: %v", err)
	}
	if _, err := call(t, env, "servers_fav_add", `{"name":"bad",`+target+`,"tool":"get-sum","json":"{}"}`); op.KindOf(err) != op.KindInvalid {
		t.Errorf("a favourite that cannot run: %v", err)
	}
	out, err := call(t, env, "servers_fav_run", `{"name":"hi"}`)
	if err != nil || !strings.Contains(jsonOf(out), "Echo: fav") {
		t.Fatalf("fav run: %v %s", err, jsonOf(out))
	}
	id := out.(client.CallOutput).HistoryID
	if out, err := call(t, env, "servers_history_rerun", `{"id":"`+id+`"}`); err != nil || !strings.Contains(jsonOf(out), "Echo: fav") {
		t.Errorf("rerun: %v %s", err, jsonOf(out))
	}
	if _, err := call(t, newEnv(t, false), "servers_fav_run", `{"name":"hi"}`); op.KindOf(err) != op.KindNotFound {
		t.Errorf("fav run in another store: %v", err)
	}
	agentEnv := *env
	agentEnv.Caller = op.Caller{Role: op.RoleAgent}
	if _, err := call(t, &agentEnv, "servers_fav_run", `{"name":"hi"}`); op.KindOf(err) != op.KindDenied {
		t.Errorf("a stdio favourite run by an agent: %v", err)
	}
	if _, err := call(t, env, "servers_fav_rm", `{"name":"hi"}`); err != nil {
		t.Error(err)
	}
	if _, err := call(t, env, "servers_fav_rm", `{"name":"hi"}`); op.KindOf(err) != op.KindNotFound {
		t.Errorf("removing it twice: %v", err)
	}
}

func TestSequenceStopsAtTheFailingStep(t *testing.T) {
	bin := everything(t)
	env := newEnv(t, true)
	var stderr bytes.Buffer
	env.Stderr = &stderr
	file := filepath.Join(t.TempDir(), "seq.json")
	os.WriteFile(file, []byte(`{"steps": [
		{"name": "sum", "tool": "get-sum", "arguments": {"a": 1, "b": 2}},
		{"name": "say", "tool": "echo", "jq": {"message": "\"got \" + .sum[0].text"}},
		{"name": "bad", "tool": "get-sum", "arguments": {"b": 1}, "jq": {"a": ".say[0].text"}},
		{"name": "never", "tool": "echo", "arguments": {"message": "not reached"}}
	]}`), 0o600)
	out, err := call(t, env, "servers_sequence", fmt.Sprintf(`{"file":%q,"command":[%q]}`, file, bin))
	if err != nil {
		t.Fatal(err)
	}
	seq := out.(client.SequenceOutput)
	if seq.OK || seq.FailedStep != 3 || len(seq.Steps) != 3 || seq.ExitCode() != 2 {
		t.Fatalf("sequence: %s", jsonOf(seq))
	}
	if got := jsonOf(seq.Steps[1].Result); !strings.Contains(got, "Echo: got The sum of 1 and 2 is 3.") {
		t.Errorf("step 2's jq argument: %s", got)
	}
	if !strings.Contains(stderr.String(), `step 3 (bad) failed: tool get-sum: argument "a" must be number, got string`) {
		t.Errorf("stderr: %s", stderr.String())
	}
}

func TestCallsApprovedByAPersonAtThePage(t *testing.T) {
	bin := everything(t)
	port := testkit.FreePort(t)
	httpServer(t, bin, port)
	env := newEnv(t, false)
	var callOp op.Operation
	for _, o := range client.Ops() {
		if o.Info().Name == "servers_call" {
			callOp = o
		}
	}
	input := json.RawMessage(fmt.Sprintf(`{"url":"http://127.0.0.1:%d/mcp","tool":"echo","arguments":{"message":"hi"}}`, port))
	// An agent the person allowed URLs at launch, then the page's person
	// (the gateway's person token, not lm's terminal).
	agentEnv := *env
	agentEnv.Caller = op.Caller{Role: op.RoleAgent}
	grant, err := op.ParseGrant([]string{"servers_call.url"}, client.Ops())
	if err != nil {
		t.Fatal(err)
	}
	agentEnv.Grant = grant
	if _, err := callOp.Call(context.Background(), &agentEnv, input); err != nil {
		t.Fatal(err)
	}
	env.Caller = op.Caller{Role: op.RolePerson}
	if _, err := callOp.Call(context.Background(), env, input); err != nil {
		t.Fatal(err)
	}
	hist, _ := call(t, env, "servers_history", `{}`)
	items := hist.(client.HistoryOutput).Items
	if len(items) != 2 || items[0].Approval != client.Auto || items[1].Approval != client.Approved {
		t.Errorf("an agent's call, then one a person approved on the page: %s", jsonOf(items))
	}
}
