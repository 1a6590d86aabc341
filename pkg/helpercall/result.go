// Package helpercall is the call contract spec 001 gives every helper tool
// (local_extract, local_verify, local_generate, local_git, local_analyze):
// the common Request fields in, and {success, data, error, error_category,
// recoverable, suggestion, confidence, tokens_used} out, plus what lm
// measures to check the spec's savings claim.
//
// Failures of the whole call are op errors (their envelope comes from
// op.EnvelopeOf with the exit code); a Result is a call that ran, possibly
// with failures inside its data (a failed check, an unsupported file).
package helpercall

import (
	"slices"
	"strconv"

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

	exit  int
	notes []string
}

// bytesPerToken is the usual rough size of a token in English and code.
const bytesPerToken = 4

// OK is an exact answer: confidence 1, no model tokens.
func OK[T any](data T, bytesRead int64) Result[T] {
	return Result[T]{Success: true, Data: &data, Confidence: 1, Recoverable: true, BytesRead: bytesRead}
}

// MarshalJSON encodes the envelope; see CompactJSON.
func (r Result[T]) MarshalJSON() ([]byte, error) { return r.CompactJSON() }

// Appender is data that encodes itself onto the end of a buffer as compact
// JSON (as jsonio.Marshal would), so an answer of megabytes is written once,
// in place, rather than encoded apart and copied into the envelope.
type Appender interface {
	AppendJSON(b []byte) ([]byte, error)
}

// CompactJSON encodes the envelope, filling tokens_saved from the size of
// the encoded data. Data comes second, so the fields after it, which
// include tokens_saved, are encoded once its size is known.
func (r Result[T]) CompactJSON() ([]byte, error) {
	b := append(make([]byte, 0, 512), `{"success":`...)
	b = strconv.AppendBool(b, r.Success)
	b = append(b, `,"data":`...)
	start := len(b)
	var err error
	switch {
	case r.Data == nil:
		b = append(b, "null"...)
	default:
		if a, ok := any(*r.Data).(Appender); ok {
			b, err = a.AppendJSON(b)
		} else {
			var data []byte
			data, err = jsonio.Marshal(*r.Data)
			b = append(b, data...)
		}
	}
	if err != nil {
		return nil, err
	}
	saved := 0
	if n := (r.BytesRead - int64(len(b)-start)) / bytesPerToken; r.Data != nil && n > 0 {
		saved = int(n)
	}
	rest, err := jsonio.Marshal(tail{
		Error: r.Error, ErrorCategory: r.ErrorCategory, Recoverable: r.Recoverable, Suggestion: r.Suggestion,
		Confidence: r.Confidence, TokensUsed: r.TokensUsed, BytesRead: r.BytesRead, TokensSaved: saved,
	})
	if err != nil {
		return nil, err
	}
	// rest is {"error":…}: its fields continue the envelope's.
	return append(append(b, ','), rest[1:]...), nil
}

// tail is the fields of Result after data, as encoded.
type tail struct {
	Error         *string `json:"error"`
	ErrorCategory *string `json:"error_category"`
	Recoverable   bool    `json:"recoverable"`
	Suggestion    *string `json:"suggestion"`
	Confidence    float64 `json:"confidence"`
	TokensUsed    int     `json:"tokens_used"`
	BytesRead     int64   `json:"bytes_read"`
	TokensSaved   int     `json:"tokens_saved"`
}

// WithExit makes the CLI exit with code while still printing the result
// (lm verify exits 8 when a check failed).
func (r Result[T]) WithExit(code int) Result[T] {
	r.exit = code
	return r
}

// WithNote adds a line the CLI prints on stderr after the result, for what
// a person must not miss inside the JSON (a file that does not exist).
func (r Result[T]) WithNote(note string) Result[T] {
	r.notes = append(slices.Clip(r.notes), note)
	return r
}

// Notes are the lines added by WithNote.
func (r Result[T]) Notes() []string { return r.notes }

// ExitCode implements op.Exiter.
func (r Result[T]) ExitCode() int { return r.exit }
