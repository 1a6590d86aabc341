package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"lmtool.dev/lm/pkg/op"
)

// maxResponseBytes bounds what is read from a server: answers are small,
// and a misbehaving server must not exhaust memory.
const maxResponseBytes = 32 << 20

// post sends body as JSON to the configured URL joined with path and
// decodes the answer into out, within the configured timeout. Failures
// become op errors with spec 001's categories.
func (c *Client) post(ctx context.Context, path string, body, out any) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return op.Errorf(op.KindInternal, "model: encode request: %w", err)
	}
	return c.do(ctx, http.MethodPost, path, payload, time.Duration(c.cfg.Timeout), out)
}

// Reachable asks the server for its list of models, within timeout: the
// cheapest request that proves the endpoint answers, without loading a
// model.
func (c *Client) Reachable(ctx context.Context, timeout time.Duration) error {
	path := "/api/tags"
	if c.cfg.Provider == OpenAI {
		path = "/models"
	}
	var models json.RawMessage
	return c.do(ctx, http.MethodGet, path, nil, min(timeout, time.Duration(c.cfg.Timeout)), &models)
}

// do sends one request to the configured URL joined with path and decodes
// the answer into out, within timeout.
func (c *Client) do(ctx context.Context, method, path string, payload []byte, timeout time.Duration, out any) error {
	attemptCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	endpoint := strings.TrimSuffix(c.cfg.URL, "/") + path
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(attemptCtx, method, endpoint, body)
	if err != nil {
		return op.Errorf(op.KindInvalid, "model: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	res, err := c.http.Do(req)
	if err == nil {
		defer res.Body.Close()
		var data []byte
		data, err = io.ReadAll(io.LimitReader(res.Body, maxResponseBytes))
		if err == nil {
			if res.StatusCode/100 != 2 {
				return c.statusError(endpoint, res.StatusCode, data)
			}
			if err := json.Unmarshal(data, out); err != nil {
				return op.Errorf(op.KindUnavailable, "model server %s sent a response that is not JSON: %v", endpoint, err).
					WithCategory(CategoryInvalidOutput)
			}
			return nil
		}
	}
	switch {
	case ctx.Err() != nil: // the caller gave up: not the server's fault
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return op.Errorf(op.KindTimeout, "model %s at %s did not answer within %s", c.cfg.Model, c.cfg.URL, timeout).
			WithCategory(CategoryTimeout).WithHint("raise timeout in the [model] table of config.toml (a cold model takes a while to load), or handle this task directly")
	}
	return op.Errorf(op.KindUnavailable, "model server %s is not responding: %v", c.cfg.URL, err).
		WithCategory(CategoryUnavailable).WithHint("start it (ollama serve), check url in [model], or handle this task directly")
}

// statusError turns an HTTP error answer into an op error. Both wire
// formats put the message in "error": a string (Ollama) or an object with a
// message (OpenAI).
func (c *Client) statusError(endpoint string, status int, body []byte) error {
	msg := strings.TrimSpace(string(body))
	var wire struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &wire) == nil && len(wire.Error) > 0 {
		var text string
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(wire.Error, &text) == nil {
			msg = text
		} else if json.Unmarshal(wire.Error, &obj) == nil && obj.Message != "" {
			msg = obj.Message
		}
	}
	if len(msg) > 500 {
		msg = msg[:500] + "…"
	}
	err := fmt.Errorf("model server %s answered %d %s: %s", endpoint, status, http.StatusText(status), msg)
	switch {
	case status == http.StatusNotFound && strings.Contains(strings.ToLower(msg), "model"):
		hint := "load it on the server, or set model in [model] to one the server has"
		if c.cfg.Provider == Ollama {
			hint = fmt.Sprintf("run: ollama pull %s", c.cfg.Model)
		}
		return (&op.Error{Kind: op.KindUnavailable, Err: err}).WithCategory(CategoryNotLoaded).WithHint("%s", hint)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return (&op.Error{Kind: op.KindDenied, Err: err}).WithCategory("model_denied").
			WithHint("set LM_MODEL_API_KEY to a key the server accepts")
	case status == http.StatusTooManyRequests || status >= 500 || status == http.StatusNotFound:
		return (&op.Error{Kind: op.KindUnavailable, Err: err}).WithCategory(CategoryUnavailable).
			WithHint("check url in [model]; for an OpenAI-compatible server it is the base URL, e.g. http://127.0.0.1:8080/v1")
	}
	return (&op.Error{Kind: op.KindInvalid, Err: err}).WithCategory("model_rejected_request")
}
