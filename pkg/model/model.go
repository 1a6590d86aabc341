// Package model is lm's optional client for a language model: Ollama's HTTP
// API or an OpenAI-compatible server, configured in $LM_HOME/config.toml and
// off by default. It is for the fuzzy tasks deterministic code cannot do
// (semantic checks, natural language to a tool call, prompt enhancement).
//
// A chat may declare a JSON Schema for its answer; the answer is then
// validated against it and, when invalid, asked for again with a correction
// hint, up to max_retries times. Failures are op errors carrying spec 001's
// categories: ollama_unavailable, model_not_loaded, invalid_output, timeout
// (whichever provider is configured), and model_unavailable when no model is
// configured.
package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/op"
)

// The error categories of spec 001, plus model_unavailable for "no model is
// configured".
const (
	CategoryNotConfigured = "model_unavailable"
	CategoryUnavailable   = "ollama_unavailable"
	CategoryNotLoaded     = "model_not_loaded"
	CategoryInvalidOutput = "invalid_output"
	CategoryTimeout       = "timeout"
)

// Message is one turn of a chat.
type Message struct {
	Role    string `json:"role"` // system, user or assistant
	Content string `json:"content"`
}

// Request is one chat.
type Request struct {
	Messages []Message
	// Format, when set, makes the answer JSON valid against this schema:
	// the server is asked to constrain its output to it, and the answer is
	// validated here whatever the server did.
	Format *jsonschema.Schema
	// Accept, when set, reads the reply's text before Format validates it:
	// it returns the answer to validate (say, a JSON value it found inside
	// prose) or an error saying what is wrong, which becomes the next
	// attempt's correction hint, within the same retry budget.
	Accept func(content string) (string, error)
}

// Response is a chat's answer.
type Response struct {
	Content string          // the final answer's text
	JSON    json.RawMessage // with Format: the answer, valid against it
	// TokensUsed counts prompt and output tokens over every attempt, as
	// the server reported them.
	TokensUsed int
	Attempts   int
}

// Client talks to the configured model.
type Client struct {
	cfg     Config
	http    *http.Client
	backend backend
}

// backend is one provider's wire format.
type backend interface {
	chat(ctx context.Context, c *Client, msgs []Message, format json.RawMessage) (reply, error)
}

// reply is what one request returned.
type reply struct {
	content string
	tokens  int
}

// New returns a client for cfg, or a model_unavailable error when no model
// is configured.
func New(cfg Config) (*Client, error) {
	if !cfg.Enabled() {
		return nil, op.Errorf(op.KindUnavailable, "no model is configured").WithCategory(CategoryNotConfigured).
			WithHint("set model (and provider, url) in the [model] table of %s, or LM_MODEL (OLLAMA_MODEL is read last)", cfg.Source)
	}
	c := &Client{cfg: cfg, http: &http.Client{}}
	switch cfg.Provider {
	case Ollama:
		c.backend = ollama{}
	case OpenAI:
		c.backend = openAI{}
	default:
		return nil, op.Errorf(op.KindInvalid, "unknown model provider %q", cfg.Provider)
	}
	return c, nil
}

// Config returns the client's settings (callers read the confidence
// threshold from it).
func (c *Client) Config() Config { return c.cfg }

// Chat sends the conversation and returns the answer. With a Format, an
// answer that is not valid JSON or breaks the schema is asked for again
// with the problem spelled out; the same budget of retries covers a server
// that is down or overloaded, with a growing pause between attempts. A
// request that outlives the configured timeout is not retried.
func (c *Client) Chat(ctx context.Context, req Request) (Response, error) {
	var resp Response
	var format json.RawMessage
	var schema *jsonschema.Resolved
	if req.Format != nil {
		var err error
		if schema, err = req.Format.Resolve(nil); err != nil {
			return resp, op.Errorf(op.KindInternal, "model: output schema: %w", err)
		}
		if format, err = json.Marshal(req.Format); err != nil {
			return resp, op.Errorf(op.KindInternal, "model: output schema: %w", err)
		}
	}
	msgs := slices.Clone(req.Messages)
	for attempt := 0; ; attempt++ {
		resp.Attempts++
		r, err := c.backend.chat(ctx, c, msgs, format)
		if err != nil {
			if transient(err) && attempt < c.cfg.MaxRetries && pause(ctx, attempt) {
				continue
			}
			return resp, err
		}
		resp.TokensUsed += r.tokens
		resp.Content = r.content
		valid, problem := accept(req, r.content, schema)
		if problem == "" {
			resp.JSON = valid
			return resp, nil
		}
		if attempt >= c.cfg.MaxRetries {
			return resp, op.Errorf(op.KindUnavailable, "the model's answer was invalid after %d attempts: %s", resp.Attempts, problem).
				WithCategory(CategoryInvalidOutput).WithHint("handle this task directly, or configure a stronger model")
		}
		msgs = append(msgs,
			Message{Role: "assistant", Content: r.content},
			Message{Role: "user", Content: "PREVIOUS OUTPUT WAS INVALID: " + problem +
				"\nTry again: reply with only one JSON value that matches the schema, no commentary."})
	}
}

// accept checks one reply: the caller's Accept first, then the schema. It
// returns the answer as JSON (nil without a schema) or what is wrong.
func accept(req Request, content string, schema *jsonschema.Resolved) (json.RawMessage, string) {
	if req.Accept != nil {
		var err error
		if content, err = req.Accept(content); err != nil {
			return nil, err.Error()
		}
	}
	if schema == nil {
		return nil, ""
	}
	return validate(content, schema)
}

// validate parses an answer as one JSON value valid against the schema; it
// returns the value re-encoded compactly, or what is wrong with it.
func validate(content string, schema *jsonschema.Resolved) (json.RawMessage, string) {
	dec := json.NewDecoder(strings.NewReader(content))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Sprintf("not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, "more than one JSON value"
	}
	if err := schema.Validate(v); err != nil {
		return nil, fmt.Sprintf("does not match the schema: %v", err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err.Error()
	}
	return out, ""
}

// transient errors are worth another attempt: the server is down,
// restarting or busy.
func transient(err error) bool {
	var e *op.Error
	return errors.As(err, &e) && e.Category == CategoryUnavailable
}

// pause waits before the next attempt: 250 ms, 500 ms, 1 s, … It reports
// false when ctx ended first.
func pause(ctx context.Context, attempt int) bool {
	t := time.NewTimer(250 * time.Millisecond << attempt)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
