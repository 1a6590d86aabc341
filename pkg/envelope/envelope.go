// Package envelope is the result shape spec 001 gives every helper tool
// (local_extract, local_verify, local_generate, local_git, local_analyze):
// {success, data, error, error_category, recoverable, suggestion, confidence,
// tokens_used}, plus what lm measures to check the spec's savings claim.
//
// Failures of the whole call are op errors (their envelope comes from
// op.EnvelopeOf with the exit code); a Result is a call that ran, possibly
// with failures inside its data (a failed check, an unsupported file).
package envelope

import (
	"bytes"
	"encoding/json"

	"lmtool.dev/lm/pkg/jsonio"
)

// Result wraps an operation's data in the spec's envelope.
type Result[T any] struct {
	Success       bool    `json:"success" jsonschema:"true when the call ran; per-item failures are reported inside data"`
	Data          *T      `json:"data"`
	Error         *string `json:"error" jsonschema:"null on success"`
	ErrorCategory *string `json:"error_category" jsonschema:"null on success"`
	Recoverable   bool    `json:"recoverable"`
	Suggestion    *string `json:"suggestion" jsonschema:"what to do next, when there is something to do"`
	Confidence    float64 `json:"confidence" jsonschema:"1 for exact (deterministic) answers; the model's own figure where a model judged"`
	TokensUsed    int     `json:"tokens_used" jsonschema:"model tokens spent (0 when no model was involved)"`
	BytesRead     int64   `json:"bytes_read" jsonschema:"bytes of input read to produce the answer"`
	TokensSaved   int     `json:"tokens_saved" jsonschema:"estimate: tokens of input read minus tokens of data returned (4 bytes a token)"`

	exit int
}

// bytesPerToken is the usual rough size of a token in English and code.
const bytesPerToken = 4

// OK is an exact answer: confidence 1, no model tokens.
func OK[T any](data T, bytesRead int64) Result[T] {
	return Result[T]{Success: true, Data: &data, Confidence: 1, Recoverable: true, BytesRead: bytesRead}
}

// MarshalJSON encodes the envelope; see CompactJSON.
func (r Result[T]) MarshalJSON() ([]byte, error) { return r.CompactJSON() }

// CompactJSON encodes the envelope, filling tokens_saved from the size of
// the encoded data. The data is encoded once and spliced into the envelope
// rather than re-scanned: it can be megabytes of matches.
func (r Result[T]) CompactJSON() ([]byte, error) {
	var data []byte
	var err error
	if r.Data == nil {
		data = []byte("null")
	} else if data, err = jsonio.Marshal(*r.Data); err != nil {
		return nil, err
	}
	saved := 0
	if n := (r.BytesRead - int64(len(data))) / bytesPerToken; r.Data != nil && n > 0 {
		saved = int(n)
	}
	head, err := jsonio.Marshal(wire{
		Success: r.Success, Data: json.RawMessage("null"), Error: r.Error, ErrorCategory: r.ErrorCategory,
		Recoverable: r.Recoverable, Suggestion: r.Suggestion, Confidence: r.Confidence,
		TokensUsed: r.TokensUsed, BytesRead: r.BytesRead, TokensSaved: saved,
	})
	if err != nil {
		return nil, err
	}
	// head is {"success":…,"data":null,…}: data is its second field.
	at := bytes.Index(head, []byte(`,"data":null`)) + len(`,"data":`)
	out := make([]byte, 0, len(head)+len(data))
	out = append(append(append(out, head[:at]...), data...), head[at+len("null"):]...)
	return out, nil
}

// wire is Result as encoded, with the data already in JSON.
type wire struct {
	Success       bool            `json:"success"`
	Data          json.RawMessage `json:"data"`
	Error         *string         `json:"error"`
	ErrorCategory *string         `json:"error_category"`
	Recoverable   bool            `json:"recoverable"`
	Suggestion    *string         `json:"suggestion"`
	Confidence    float64         `json:"confidence"`
	TokensUsed    int             `json:"tokens_used"`
	BytesRead     int64           `json:"bytes_read"`
	TokensSaved   int             `json:"tokens_saved"`
}

// WithExit makes the CLI exit with code while still printing the result
// (lm verify exits 8 when a check failed).
func (r Result[T]) WithExit(code int) Result[T] {
	r.exit = code
	return r
}

// ExitCode implements op.Exiter.
func (r Result[T]) ExitCode() int { return r.exit }
