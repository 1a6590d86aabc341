package client_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers/client"
	"lmtool.dev/lm/pkg/testkit"
)

// fakeModel is a model server on loopback speaking Ollama's /api/chat: it
// answers each request with the next scripted reply and keeps what it was
// sent.
type fakeModel struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []string
	requests []chatRequest
}

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Format map[string]any `json:"format"`
}

func newFakeModel(t *testing.T, replies ...string) *fakeModel {
	t.Helper()
	m := &fakeModel{replies: replies}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/api/chat" {
			t.Errorf("model request to %s: %v", r.URL.Path, err)
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		m.requests = append(m.requests, req)
		if len(m.replies) == 0 {
			t.Errorf("model request %d after the script ended: %+v", len(m.requests), req.Messages)
			http.Error(w, `{"error":"the script ended"}`, http.StatusBadRequest)
			return
		}
		reply := m.replies[0]
		m.replies = m.replies[1:]
		json.NewEncoder(w).Encode(map[string]any{
			"model": req.Model, "message": map[string]any{"role": "assistant", "content": reply},
			"done": true, "prompt_eval_count": 10, "eval_count": 5,
		})
	}))
	t.Cleanup(m.Close)
	return m
}

// configure writes the [model] table a user would into home's config.toml.
func (m *fakeModel) configure(t *testing.T, home string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(fmt.Sprintf("[model]\nmodel = \"tiny\"\nurl = %q\n", m.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// request is the i-th request the model got.
func (m *fakeModel) request(t *testing.T, i int) chatRequest {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if i >= len(m.requests) {
		t.Fatalf("the model got %d requests, not %d", len(m.requests), i+1)
	}
	return m.requests[i]
}

// last is the content of a request's last message.
func (r chatRequest) last() string { return r.Messages[len(r.Messages)-1].Content }

func (m *fakeModel) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

func TestAskRetriesBadProposalsAndFollowsUp(t *testing.T) {
	bin := everything(t)
	env := newEnv(t, true)
	m := newFakeModel(t,
		`{"action":"call","tool":"add","arguments":{"a":40,"b":2}}`,
		`{"action":"call","tool":"get-sum","arguments":{"a":"forty","b":2}}`,
		"Sure, I will add them:\n```json\n{\"name\": \"get-sum\", \"arguments\": {\"a\": 40, \"b\": 2}}\n```",
		`{"action":"call","tool":"echo","arguments":{"message":"42"},"reason":"say the sum"}`,
		`{"action":"done","answer":"40 and 2 make 42."}`,
	)
	m.configure(t, env.Home)
	out, err := call(t, env, "servers_ask", fmt.Sprintf(`{"command":[%q],"request":"add 40 and 2, then echo the sum","yes":true}`, bin))
	if err != nil {
		t.Fatal(err)
	}
	ask := out.(client.AskOutput)
	if ask.Stopped != client.StoppedDone || ask.Answer != "40 and 2 make 42." || len(ask.Steps) != 2 || ask.TokensUsed != 75 {
		t.Fatalf("ask: %s", jsonOf(ask))
	}
	if s := ask.Steps[0]; s.Proposal.Tool != "get-sum" || s.Approval != client.VerdictAuto || !strings.Contains(jsonOf(s.Result), "The sum of 40 and 2 is 42.") {
		t.Errorf("step 1: %s", jsonOf(s))
	}
	if s := ask.Steps[1]; s.Proposal.Reason != "say the sum" || !strings.Contains(jsonOf(s.Result), "Echo: 42") || s.HistoryID == "" {
		t.Errorf("step 2: %s", jsonOf(s))
	}

	first := m.request(t, 0)
	if first.Model != "tiny" || first.Messages[0].Role != "system" || !strings.Contains(first.Messages[0].Content, `"name":"get-sum"`) ||
		!strings.Contains(first.Messages[0].Content, `"inputSchema":{`) || first.last() != "add 40 and 2, then echo the sum" {
		t.Errorf("the first request does not show the tools and the request: %+v", first.Messages)
	}
	if enum := jsonOf(first.Format["properties"].(map[string]any)["action"]); !strings.Contains(enum, `"enum":["call","done"]`) {
		t.Errorf("format: %s", jsonOf(first.Format))
	}
	for i, want := range []string{
		`PREVIOUS OUTPUT WAS INVALID: the server has no tool "add"; its tools are: `,
		`PREVIOUS OUTPUT WAS INVALID: tool get-sum: argument "a" must be number, got string`,
	} {
		if got := m.request(t, i+1).last(); !strings.HasPrefix(got, want) {
			t.Errorf("retry %d: %q, want %q", i+1, got, want)
		}
	}
	if got := m.request(t, 3).last(); !strings.Contains(got, `The result of get-sum: [{"text":"The sum of 40 and 2 is 42."`) {
		t.Errorf("the model was not shown the result: %q", got)
	}

	hist, _ := call(t, env, "servers_history", `{}`)
	items := hist.(client.HistoryOutput).Items
	if len(items) != 2 || items[0].Approval != client.Auto || items[1].Tool != "echo" {
		t.Errorf("history: %s", jsonOf(items))
	}
}

func TestAskStopsAtMaxStepsWithASummary(t *testing.T) {
	bin := everything(t)
	env := newEnv(t, true)
	m := newFakeModel(t,
		`{"action":"call","tool":"echo","arguments":{"message":"one"}}`,
		`{"action":"call","tool":"gzip-file-as-resource","arguments":{"name":"x","data":"ftp://x"}}`,
		`{"action":"call","tool":"echo","arguments":{"message":"three"}}`,
		`{"action":"done","answer":"echo works; gzip refused ftp."}`,
	)
	m.configure(t, env.Home)
	out, err := call(t, env, "servers_ask", fmt.Sprintf(`{"command":[%q],"request":"try things","yes":true,"max_steps":2}`, bin))
	if err != nil {
		t.Fatal(err)
	}
	ask := out.(client.AskOutput)
	if ask.Stopped != client.StoppedMaxSteps || ask.Answer != "echo works; gzip refused ftp." || len(ask.Steps) != 2 || ask.ExitCode() != 0 {
		t.Fatalf("ask: %s", jsonOf(ask))
	}
	if s := ask.Steps[1]; !strings.Contains(s.Error, "Unsupported URL protocol") || s.HistoryID == "" {
		t.Errorf("the tool's error: %s", jsonOf(s))
	}
	if got := m.request(t, 2).Messages; !strings.Contains(got[len(got)-1].Content, "The call of gzip-file-as-resource failed") ||
		!strings.Contains(got[len(got)-1].Content, "limit of 2 calls") {
		t.Errorf("the model was not told of the failure and the limit: %q", got[len(got)-1].Content)
	}
	final := m.request(t, 3)
	if !strings.HasPrefix(final.last(), "PREVIOUS OUTPUT WAS INVALID: no more calls may run") || !strings.Contains(jsonOf(final.Format), `"enum":["done"]`) {
		t.Errorf("the final request: %q, format %s", final.last(), jsonOf(final.Format))
	}
}

func TestAskAtMaxStepsWithoutASummaryEndsWithTheLastResult(t *testing.T) {
	bin := everything(t)
	env := newEnv(t, true)
	again := `{"action":"call","tool":"echo","arguments":{"message":"again"}}`
	// One call, then a model that keeps proposing calls through every
	// attempt of the summary (max_retries 2: three attempts).
	m := newFakeModel(t, again, again, again, again)
	m.configure(t, env.Home)
	out, err := call(t, env, "servers_ask", fmt.Sprintf(`{"command":[%q],"request":"echo forever","yes":true,"max_steps":1}`, bin))
	if err != nil {
		t.Fatal(err)
	}
	ask := out.(client.AskOutput)
	if ask.Stopped != client.StoppedMaxSteps || ask.ExitCode() != 0 || ask.Error != "" || len(ask.Steps) != 1 ||
		!strings.Contains(ask.Answer, "Echo: again") {
		t.Fatalf("ask: %s", jsonOf(ask))
	}
	if m.count() != 4 {
		t.Errorf("the model got %d requests, not 4", m.count())
	}
}

func TestAskDryRunProposesOnly(t *testing.T) {
	bin := everything(t)
	port := testkit.FreePort(t)
	httpServer(t, bin, port)
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	for _, commandLine := range []bool{true, false} {
		env := newEnv(t, commandLine)
		m := newFakeModel(t, `{"action":"call","tool":"echo","arguments":{"message":"hi"},"reason":"asked to"}`)
		m.configure(t, env.Home)
		out, err := call(t, env, "servers_ask", fmt.Sprintf(`{"url":%q,"request":"say hi","dry_run":true}`, url))
		if err != nil {
			t.Fatal(err)
		}
		ask := out.(client.AskOutput)
		if ask.Stopped != client.StoppedDryRun || len(ask.Steps) != 1 || ask.Steps[0].Approval != client.VerdictProposed ||
			ask.Steps[0].Result != nil || jsonOf(ask.Steps[0].Proposal.Arguments) != `{"message":"hi"}` {
			t.Errorf("command line %v: %s", commandLine, jsonOf(ask))
		}
		if hist, _ := call(t, env, "servers_history", `{}`); len(hist.(client.HistoryOutput).Items) != 0 {
			t.Errorf("a dry run ran a call: %s", jsonOf(hist))
		}
	}
}

func TestAskRefusals(t *testing.T) {
	env := newEnv(t, true)
	noModel := newEnv(t, true)
	newFakeModel(t).configure(t, env.Home) // never asked: every case fails first
	agentEnv := *env
	agentEnv.Caller = op.Caller{Role: op.RoleAgent}
	for _, tc := range []struct {
		env      *op.Env
		input    string
		kind     op.Kind
		category string
		msg      string
	}{
		{noModel, `{"command":["true"],"request":"hi","yes":true}`, op.KindUnavailable, "model_unavailable", "no model is configured"},
		{&agentEnv, `{"server":"everything","request":"hi"}`, op.KindDenied, "", "never runs a call a person has not approved"},
		{&agentEnv, `{"server":"everything","request":"hi","yes":true}`, op.KindDenied, "denied", `may not set "yes"`},
		{&agentEnv, `{"url":"http://127.0.0.1:1/mcp","request":"hi","dry_run":true}`, op.KindDenied, "denied", `may not set "url"`},
		{env, `{"command":["true"],"request":"hi","yes":true,"dry_run":true}`, op.KindInvalid, "", "contradict"},
		{env, `{"command":["true"],"request":" "}`, op.KindInvalid, "", "no request given"},
		{env, `{"command":["true"],"request":"hi","max_steps":-1}`, op.KindInvalid, "", "--max-steps"},
	} {
		_, err := call(t, tc.env, "servers_ask", tc.input)
		e := op.EnvelopeOf(err)
		if err == nil || op.KindOf(err) != tc.kind || !strings.Contains(err.Error(), tc.msg) || (tc.category != "" && e.ErrorCategory != tc.category) {
			t.Errorf("%s: got %v (%+v), want kind %d with %q", tc.input, err, e, tc.kind, tc.msg)
		}
	}
	e := op.EnvelopeOf(func() error {
		_, err := call(t, noModel, "servers_ask", `{"command":["true"],"request":"hi","yes":true}`)
		return err
	}())
	if !strings.Contains(e.Suggestion, "[model]") || !strings.Contains(e.Suggestion, "LM_MODEL") || !strings.Contains(e.Suggestion, "config.toml") {
		t.Errorf("the hint does not name the setting: %q", e.Suggestion)
	}
}

func TestAskFollowsUpOnPreviousTurns(t *testing.T) {
	bin := everything(t)
	port := testkit.FreePort(t)
	httpServer(t, bin, port)
	env := newEnv(t, false)
	m := newFakeModel(t, `{"action":"call","tool":"echo","arguments":{"message":"42"},"reason":"say the sum"}`)
	m.configure(t, env.Home)
	previous := `[{"request":"add 40 and 2","steps":[
		{"proposal":{"action":"call","tool":"get-sum","arguments":{"a":40,"b":1}},"approval":"edited","arguments":{"a":40,"b":2},"result":[{"type":"text","text":"The sum of 40 and 2 is 42."}]},
		{"proposal":{"action":"call","tool":"echo","arguments":{"message":"x"}},"approval":"rejected"}]}]`
	out, err := call(t, env, "servers_ask", fmt.Sprintf(`{"url":"http://127.0.0.1:%d/mcp","request":"now echo it","dry_run":true,"previous":%s}`, port, previous))
	if err != nil {
		t.Fatal(err)
	}
	if ask := out.(client.AskOutput); ask.Stopped != client.StoppedDryRun || ask.Steps[0].Proposal.Reason != "say the sum" {
		t.Fatalf("ask: %s", jsonOf(ask))
	}
	var got []string
	for _, msg := range m.request(t, 0).Messages[1:] {
		got = append(got, msg.Role+": "+msg.Content)
	}
	want := []string{
		"user: add 40 and 2",
		`assistant: {"action":"call","tool":"get-sum","arguments":{"a":40,"b":1}}`,
		`user: I changed the arguments before running the call: {"a":40,"b":2}`,
		`user: The result of get-sum: [{"text":"The sum of 40 and 2 is 42.","type":"text"}]`,
		`assistant: {"action":"call","tool":"echo","arguments":{"message":"x"}}`,
		"user: I rejected that call; it did not run.",
		"user: now echo it",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the model was sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
