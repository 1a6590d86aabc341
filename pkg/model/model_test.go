package model

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/op"
)

// server is a model server on loopback that answers from a script, one step
// a request, and records what it was sent.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	steps    []step
	paths    []string
	requests []map[string]any
	headers  []http.Header
}

type step func(w http.ResponseWriter, r *http.Request)

func newServer(t *testing.T, steps ...step) *server {
	t.Helper()
	s := &server{steps: steps}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("request body is not JSON: %q", body)
		}
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.Path)
		s.requests = append(s.requests, req)
		s.headers = append(s.headers, r.Header.Clone())
		if len(s.steps) == 0 {
			s.mu.Unlock()
			t.Errorf("unexpected request %d to %s", len(s.requests), r.URL.Path)
			http.Error(w, "script ended", http.StatusInternalServerError)
			return
		}
		next := s.steps[0]
		s.steps = s.steps[1:]
		s.mu.Unlock()
		next(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) request(i int) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[i]
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// ollamaSays answers /api/chat as Ollama does with stream false.
func ollamaSays(content string, promptTokens, outputTokens int) step {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{
			"model": "qwen2.5-coder:7b", "created_at": "2025-01-01T00:00:00Z",
			"message":     map[string]any{"role": "assistant", "content": content},
			"done_reason": "stop", "done": true, "total_duration": 12345,
			"prompt_eval_count": promptTokens, "eval_count": outputTokens,
		})
	}
}

// openAISays answers /v1/chat/completions as OpenAI-compatible servers do.
func openAISays(content string, total int) step {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
			"usage": map[string]any{"prompt_tokens": total - 5, "completion_tokens": 5, "total_tokens": total},
		})
	}
}

func status(code int, body any) step {
	return func(w http.ResponseWriter, r *http.Request) { writeJSON(w, code, body) }
}

// verdict is the schema the tests ask for.
var verdict = &jsonschema.Schema{
	Type:     "object",
	Required: []string{"status", "confidence"},
	Properties: map[string]*jsonschema.Schema{
		"status":     {Type: "string", Enum: []any{"pass", "fail"}},
		"confidence": {Type: "number", Minimum: jsonschema.Ptr(0.0), Maximum: jsonschema.Ptr(1.0)},
	},
	AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
}

func client(t *testing.T, provider, url string, edit ...func(*Config)) *Client {
	t.Helper()
	cfg := Config{Provider: provider, URL: url, Model: "qwen2.5-coder:7b",
		Timeout: Duration(10 * time.Second), MaxRetries: 2, ConfidenceThreshold: 0.7}
	for _, e := range edit {
		e(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ask(t *testing.T, c *Client) (Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Chat(ctx, Request{
		Messages: []Message{{Role: "system", Content: "You are a code verification tool."}, {Role: "user", Content: "Is it persisted?"}},
		Format:   verdict,
	})
}

func category(err error) string { return op.EnvelopeOf(err).ErrorCategory }

func TestOllamaChatSendsTheSchemaAndCountsTokens(t *testing.T) {
	s := newServer(t, ollamaSays(`{"status":"pass", "confidence":0.9}`, 120, 30))
	res, err := ask(t, client(t, Ollama, s.URL))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.JSON) != `{"confidence":0.9,"status":"pass"}` || res.TokensUsed != 150 || res.Attempts != 1 {
		t.Fatalf("response = %+v (JSON %s)", res, res.JSON)
	}
	req := s.request(0)
	if s.paths[0] != "/api/chat" || req["model"] != "qwen2.5-coder:7b" || req["stream"] != false {
		t.Errorf("request to %s = %v", s.paths[0], req)
	}
	format, _ := req["format"].(map[string]any)
	if format["type"] != "object" || format["required"] == nil {
		t.Errorf("format was not the schema: %v", req["format"])
	}
	if msgs := req["messages"].([]any); len(msgs) != 2 || msgs[1].(map[string]any)["content"] != "Is it persisted?" {
		t.Errorf("messages = %v", msgs)
	}
}

func TestChatWithoutFormatReturnsText(t *testing.T) {
	s := newServer(t, ollamaSays("Plain words.", 3, 4))
	res, err := client(t, Ollama, s.URL).Chat(context.Background(), Request{Messages: []Message{{Role: "user", Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "Plain words." || res.JSON != nil || res.TokensUsed != 7 {
		t.Fatalf("response = %+v", res)
	}
	if _, ok := s.request(0)["format"]; ok {
		t.Error("format sent without a schema")
	}
}

func TestInvalidAnswersAreRetriedWithACorrectionHint(t *testing.T) {
	for _, tc := range []struct {
		name, first, problem string
	}{
		{"invalid JSON", `{"status": pass`, "not valid JSON"},
		{"schema violation", `{"status":"maybe","confidence":0.9}`, "does not match the schema"},
		{"two values", `{"status":"pass","confidence":1} {}`, "more than one JSON value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, ollamaSays(tc.first, 100, 10), ollamaSays(`{"status":"fail","confidence":0.8}`, 130, 12))
			res, err := ask(t, client(t, Ollama, s.URL))
			if err != nil {
				t.Fatal(err)
			}
			if res.Attempts != 2 || res.TokensUsed != 252 || string(res.JSON) != `{"confidence":0.8,"status":"fail"}` {
				t.Fatalf("response = %+v (JSON %s)", res, res.JSON)
			}
			msgs := s.request(1)["messages"].([]any)
			if len(msgs) != 4 {
				t.Fatalf("retry sent %d messages, want the conversation plus the bad answer and a hint", len(msgs))
			}
			bad, hint := msgs[2].(map[string]any), msgs[3].(map[string]any)
			if bad["role"] != "assistant" || bad["content"] != tc.first {
				t.Errorf("the bad answer was not replayed: %v", bad)
			}
			if text := hint["content"].(string); hint["role"] != "user" || !strings.HasPrefix(text, "PREVIOUS OUTPUT WAS INVALID: "+tc.problem) {
				t.Errorf("hint = %v", hint)
			}
		})
	}
}

func TestInvalidOutputAfterMaxRetries(t *testing.T) {
	s := newServer(t, ollamaSays("nope", 1, 1), ollamaSays("still no", 1, 1))
	res, err := ask(t, client(t, Ollama, s.URL, func(c *Config) { c.MaxRetries = 1 }))
	if category(err) != CategoryInvalidOutput || op.KindOf(err) != op.KindUnavailable {
		t.Fatalf("err = %v (%s)", err, category(err))
	}
	if res.Attempts != 2 || res.TokensUsed != 4 {
		t.Errorf("response = %+v", res)
	}
	if !strings.Contains(err.Error(), "after 2 attempts") {
		t.Errorf("message = %q", err)
	}
}

func TestServerDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close() // nothing listens there now: connection refused
	res, err := ask(t, client(t, Ollama, url, func(c *Config) { c.MaxRetries = 1 }))
	if category(err) != CategoryUnavailable || op.KindOf(err) != op.KindUnavailable {
		t.Fatalf("err = %v (%s)", err, category(err))
	}
	if res.Attempts != 2 {
		t.Errorf("attempts = %d, want the first and one retry", res.Attempts)
	}
	if e := op.EnvelopeOf(err); !strings.Contains(e.Suggestion, "ollama serve") {
		t.Errorf("suggestion = %q", e.Suggestion)
	}
}

func TestBusyServerIsRetried(t *testing.T) {
	s := newServer(t, status(503, map[string]any{"error": "server busy"}), ollamaSays(`{"status":"pass","confidence":1}`, 2, 2))
	res, err := ask(t, client(t, Ollama, s.URL))
	if err != nil || res.Attempts != 2 {
		t.Fatalf("res = %+v, err = %v", res, err)
	}
}

func TestSlowServerTimesOut(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	res, err := ask(t, client(t, Ollama, s.URL, func(c *Config) { c.Timeout = Duration(50 * time.Millisecond) }))
	if category(err) != CategoryTimeout || op.KindOf(err) != op.KindTimeout {
		t.Fatalf("err = %v (%s)", err, category(err))
	}
	if res.Attempts != 1 {
		t.Errorf("a timeout was retried: %d attempts", res.Attempts)
	}
}

func TestCallerCancellationIsNotATimeout(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		cancel()
		<-r.Context().Done()
	})
	_, err := client(t, Ollama, s.URL).Chat(ctx, Request{Messages: []Message{{Role: "user", Content: "hi"}}})
	if err != context.Canceled {
		t.Fatalf("err = %v", err)
	}
}

func TestModelNotFound(t *testing.T) {
	s := newServer(t, status(404, map[string]any{"error": `model "x" not found, try pulling it first`}))
	res, err := ask(t, client(t, Ollama, s.URL, func(c *Config) { c.Model = "x" }))
	if category(err) != CategoryNotLoaded || op.KindOf(err) != op.KindUnavailable {
		t.Fatalf("err = %v (%s)", err, category(err))
	}
	e := op.EnvelopeOf(err)
	if !strings.Contains(e.Error, `model "x" not found`) || e.Suggestion != "run: ollama pull x" || res.Attempts != 1 {
		t.Errorf("envelope = %+v, attempts %d", e, res.Attempts)
	}
}

func TestResponseThatIsNotJSON(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>proxy error</html>") })
	_, err := ask(t, client(t, Ollama, s.URL))
	if category(err) != CategoryInvalidOutput {
		t.Fatalf("err = %v (%s)", err, category(err))
	}
}

func TestOpenAICompatible(t *testing.T) {
	for _, base := range []string{"", "/v1", "/v1/"} {
		t.Run("base "+base, func(t *testing.T) {
			s := newServer(t, openAISays(`{"status":"pass","confidence":0.75}`, 42))
			res, err := ask(t, client(t, OpenAI, s.URL+base, func(c *Config) { c.APIKey = "k" }))
			if err != nil {
				t.Fatal(err)
			}
			if string(res.JSON) != `{"confidence":0.75,"status":"pass"}` || res.TokensUsed != 42 {
				t.Fatalf("response = %+v", res)
			}
			if s.paths[0] != "/v1/chat/completions" || s.headers[0].Get("Authorization") != "Bearer k" {
				t.Errorf("path %s, headers %v", s.paths[0], s.headers[0])
			}
			rf := s.request(0)["response_format"].(map[string]any)
			js := rf["json_schema"].(map[string]any)
			if rf["type"] != "json_schema" || js["schema"].(map[string]any)["type"] != "object" {
				t.Errorf("response_format = %v", rf)
			}
		})
	}
}

func TestOpenAIErrors(t *testing.T) {
	notFound := map[string]any{"error": map[string]any{"message": "The model `x` does not exist", "type": "invalid_request_error", "code": "model_not_found"}}
	for _, tc := range []struct {
		name     string
		step     step
		category string
		kind     op.Kind
	}{
		{"model not found", status(404, notFound), CategoryNotLoaded, op.KindUnavailable},
		{"no key", status(401, map[string]any{"error": map[string]any{"message": "invalid api key"}}), "model_denied", op.KindDenied},
		{"bad request", status(400, map[string]any{"error": map[string]any{"message": "response_format unsupported"}}), "model_rejected_request", op.KindInvalid},
		{"no choices", status(200, map[string]any{"choices": []any{}}), CategoryInvalidOutput, op.KindUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, tc.step)
			_, err := ask(t, client(t, OpenAI, s.URL))
			if category(err) != tc.category || op.KindOf(err) != tc.kind {
				t.Fatalf("err = %v (%s, exit %d)", err, category(err), op.KindOf(err).ExitCode())
			}
		})
	}
}

func TestNewWithoutAModel(t *testing.T) {
	_, err := New(Config{Provider: Ollama, Source: "/h/config.toml"})
	if category(err) != CategoryNotConfigured || op.KindOf(err) != op.KindUnavailable {
		t.Fatalf("err = %v (%s)", err, category(err))
	}
}

func TestAcceptReadsTheReplyAndRejectsWithAReason(t *testing.T) {
	s := newServer(t,
		ollamaSays(`{"status":"pass","confidence":0.2}`, 1, 1),
		ollamaSays("The verdict: {\"status\":\"fail\",\"confidence\":0.9} as asked.", 1, 1))
	accept := func(content string) (string, error) {
		start, end := strings.Index(content, "{"), strings.LastIndex(content, "}")
		if strings.Contains(content, "0.2") {
			return "", fmt.Errorf("confidence 0.2 is too low to be useful")
		}
		return content[start : end+1], nil
	}
	res, err := client(t, Ollama, s.URL).Chat(context.Background(), Request{
		Messages: []Message{{Role: "user", Content: "Is it persisted?"}}, Format: verdict, Accept: accept})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || string(res.JSON) != `{"confidence":0.9,"status":"fail"}` || !strings.HasPrefix(res.Content, "The verdict") {
		t.Fatalf("response = %+v (JSON %s)", res, res.JSON)
	}
	hint := s.request(1)["messages"].([]any)[2].(map[string]any)["content"].(string)
	if !strings.HasPrefix(hint, "PREVIOUS OUTPUT WAS INVALID: confidence 0.2 is too low") {
		t.Errorf("hint = %q", hint)
	}
}
