package enhance

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// ollama is a model server on loopback speaking Ollama's /api/chat. Each
// model answers as its entry in replies says: a text, or "missing" for a
// model that is not pulled. It records every request.
type ollama struct {
	*httptest.Server
	mu       sync.Mutex
	requests []chatRequest
}

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Stream bool `json:"stream"`
}

func newOllama(t *testing.T, replies map[string]string) *ollama {
	t.Helper()
	o := &ollama{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/chat" {
			t.Errorf("request to %s", r.URL.Path)
		}
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("request body: %v", err)
		}
		o.mu.Lock()
		o.requests = append(o.requests, req)
		o.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		reply, ok := replies[req.Model]
		if !ok || reply == "missing" {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]any{"error": `model "` + req.Model + `" not found, try pulling it first`})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"model": req.Model, "created_at": "2026-01-01T00:00:00Z", "done": true, "done_reason": "stop",
			"message":           map[string]any{"role": "assistant", "content": reply},
			"prompt_eval_count": 20, "eval_count": 10,
		})
	}))
	t.Cleanup(o.Close)
	return o
}

func (o *ollama) calls() []chatRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]chatRequest(nil), o.requests...)
}

// home writes config.toml's [model] table for url (none when url is
// empty) and the rules file (none when rules is empty).
func home(t *testing.T, url, rules string) string {
	t.Helper()
	dir := t.TempDir()
	if url != "" {
		toml := "[model]\nprovider = \"ollama\"\nurl = \"" + url + "\"\nmodel = \"base-model\"\nmax_retries = 0\ntimeout = \"10s\"\n"
		if err := os.WriteFile(dir+"/config.toml", []byte(toml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if rules != "" {
		if err := os.WriteFile(Path(dir), []byte(rules), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"LM_MODEL", "LM_MODEL_URL", "LM_MODEL_PROVIDER"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	return dir
}

// serve puts the enhancer's handler on loopback and returns a function
// that posts a prompt as a client.
func serve(t *testing.T, home string) func(client, prompt string) (int, Result) {
	t.Helper()
	e, err := New(home, os.LookupEnv, 100, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	return func(client, prompt string) (int, Result) {
		t.Helper()
		body, _ := json.Marshal(Request{Prompt: prompt})
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(string(body)))
		if client != "" {
			req.Header.Set("X-Client-Name", client)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out Result
		json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out
	}
}

const specRules = `{
  "default": {"enabled": true, "model": "llama3.2:3b", "system_prompt": "Improve clarity and structure."},
  "clients": {
    "vscode": {"model": "qwen2.5-coder:7b", "system_prompt": "Code-first responses. Include file paths."},
    "obsidian": {"system_prompt": "Format in Markdown."},
    "raycast": {"enabled": false}
  },
  "fallback_chain": ["phi3:mini", null, "never-tried"]
}`

func TestClientRulesAndTheCache(t *testing.T) {
	o := newOllama(t, map[string]string{"llama3.2:3b": "A clearer prompt.", "qwen2.5-coder:7b": "  Edit cmd/lm/main.go: add a --verbose flag.\n"})
	post := serve(t, home(t, o.URL, specRules))

	code, res := post("vscode", "add verbose flag")
	if code != 200 || !res.Enhanced || res.Prompt != "Edit cmd/lm/main.go: add a --verbose flag." || res.Model != "qwen2.5-coder:7b" ||
		res.Original != "add verbose flag" || res.Client != "vscode" || res.Cached || res.TokensUsed != 30 {
		t.Fatalf("vscode: %d %+v", code, res)
	}
	req := o.calls()[0]
	if req.Model != "qwen2.5-coder:7b" || req.Stream || len(req.Messages) != 2 ||
		req.Messages[0].Role != "system" || req.Messages[0].Content != "Code-first responses. Include file paths." ||
		req.Messages[1].Role != "user" || req.Messages[1].Content != "add verbose flag" {
		t.Fatalf("the model was asked %+v", req)
	}

	// The same prompt from the same client is answered from the cache.
	if _, res := post("vscode", "add verbose flag"); !res.Cached || res.Prompt != "Edit cmd/lm/main.go: add a --verbose flag." {
		t.Fatalf("repeat: %+v", res)
	}
	if n := len(o.calls()); n != 1 {
		t.Fatalf("the repeat reached the model: %d requests", n)
	}

	// A client's rule overrides the default field by field; no header, or an
	// unknown client, gets the default.
	if _, res := post("obsidian", "notes on MCP"); res.Model != "llama3.2:3b" || o.calls()[1].Messages[0].Content != "Format in Markdown." {
		t.Fatalf("obsidian: %+v, asked %+v", res, o.calls()[1])
	}
	for _, client := range []string{"", "some-editor"} {
		_, res := post(client, "notes on MCP "+client)
		if res.Model != "llama3.2:3b" || !res.Enhanced {
			t.Fatalf("client %q: %+v", client, res)
		}
		if want := map[string]string{"": DefaultClient}[client]; want != "" && res.Client != want {
			t.Fatalf("no header: client %q", res.Client)
		}
	}
	if last := o.calls()[len(o.calls())-1]; last.Messages[0].Content != "Improve clarity and structure." {
		t.Fatalf("default system prompt: %+v", last)
	}

	// A disabled client gets its prompt back, untouched, without a request.
	before := len(o.calls())
	if _, res := post("raycast", "list my open PRs"); res.Enhanced || res.Prompt != "list my open PRs" || !strings.Contains(res.Reason, "disabled for client raycast") {
		t.Fatalf("raycast: %+v", res)
	}
	if len(o.calls()) != before {
		t.Fatal("a disabled client reached the model")
	}

	if code, _ := post("vscode", "   "); code != 400 {
		t.Fatalf("an empty prompt: %d, want 400", code)
	}
}

func TestFallbackChain(t *testing.T) {
	o := newOllama(t, map[string]string{"llama3.2:3b": "missing", "phi3:mini": "Polished by the fallback."})
	post := serve(t, home(t, o.URL, specRules))
	_, res := post("", "fix the tests")
	if !res.Enhanced || res.Model != "phi3:mini" || res.Prompt != "Polished by the fallback." {
		t.Fatalf("%+v", res)
	}
	// The first model's failure does not make an enhanced answer an error.
	if res.Category != "" || res.Reason != "" {
		t.Errorf("an enhanced answer carries the first model's failure: %+v", res)
	}
	var asked []string
	for _, c := range o.calls() {
		asked = append(asked, c.Model)
	}
	if strings.Join(asked, ",") != "llama3.2:3b,phi3:mini" {
		t.Fatalf("models asked: %v", asked)
	}

	// When every model in the chain fails, null ends it: the original
	// comes back with each model's reason, and nothing after null is tried.
	o2 := newOllama(t, map[string]string{})
	post = serve(t, home(t, o2.URL, specRules))
	_, res = post("", "fix the tests")
	if res.Enhanced || res.Prompt != "fix the tests" || res.Category != "model_not_loaded" ||
		!strings.Contains(res.Reason, "llama3.2:3b") || !strings.Contains(res.Reason, "phi3:mini") {
		t.Fatalf("%+v", res)
	}
	for _, c := range o2.calls() {
		if c.Model == "never-tried" {
			t.Fatal("a model after null in the chain was tried")
		}
	}
}

func TestModelDownOrNotConfiguredReturnsTheOriginal(t *testing.T) {
	// A port nothing listens on: the model server is down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	post := serve(t, home(t, down, ""))
	code, res := post("vscode", "summarise the diff")
	if code != 200 || res.Enhanced || res.Prompt != "summarise the diff" || res.Model != "" ||
		res.Category != "ollama_unavailable" || !strings.Contains(res.Reason, "base-model") {
		t.Fatalf("model down: %d %+v", code, res)
	}

	post = serve(t, home(t, "", ""))
	code, res = post("", "summarise the diff")
	if code != 200 || res.Enhanced || res.Prompt != "summarise the diff" || res.Category != "model_unavailable" ||
		!strings.Contains(res.Reason, "no model is configured") {
		t.Fatalf("no model: %d %+v", code, res)
	}
}

func TestRulesFileIsCheckedStrictly(t *testing.T) {
	dir := home(t, "", `{"default": {"modle": "llama3.2:3b"}}`)
	_, err := New(dir, os.LookupEnv, 10, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), `unknown field "modle"`) || !strings.Contains(err.Error(), FileName) {
		t.Fatalf("err = %v", err)
	}
}

// Health asks the model server for its models (Ollama's /api/tags), and
// says so when it does not answer; no model configured is not a failure.
func TestHealthAsksTheModelServer(t *testing.T) {
	tags := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/api/tags" {
			t.Errorf("health asked %s %s", r.Method, r.URL.Path)
		}
		json.NewEncoder(w).Encode(map[string]any{"models": []any{}})
	}))
	defer tags.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	up, err := New(home(t, tags.URL, ""), os.LookupEnv, 100, time.Minute, quiet)
	if err != nil {
		t.Fatal(err)
	}
	m, cache := up.Health(context.Background())
	if !m.Configured || !m.Reachable || m.Model != "base-model" || m.Error != "" || cache.MaxSize != 100 {
		t.Fatalf("a server that answers: %+v %+v", m, cache)
	}

	gone := httptest.NewServer(http.NotFoundHandler())
	url := gone.URL
	gone.Close()
	down, err := New(home(t, url, ""), os.LookupEnv, 100, time.Minute, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := down.Health(context.Background()); m.Reachable || m.ErrorCategory != "ollama_unavailable" {
		t.Fatalf("a server that is gone: %+v", m)
	}

	none, err := New(home(t, "", ""), os.LookupEnv, 100, time.Minute, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := none.Health(context.Background()); m.Configured || m.Error != "" {
		t.Fatalf("no model configured: %+v", m)
	}
}
