package op

import (
	"context"
	"errors"
	"fmt"

	"lmtool.dev/lm/pkg/store"
)

// Kind classifies an error by what the caller can do about it. Each kind maps
// to one exit code on the CLI and to a default error_category in JSON errors.
type Kind int

// The kinds, in exit-code order. The numbering is the documented exit-code
// table, so it must never be reordered.
const (
	KindOK           Kind = iota // 0: success
	KindInternal                 // 1: internal or unexpected
	KindInvalid                  // 2: usage or invalid input
	KindNotFound                 // 3: not found
	KindConflict                 // 4: conflict with the stored state
	KindDenied                   // 5: denied (allowlist, auth)
	KindUnavailable              // 6: store locked, model or child server down
	KindTimeout                  // 7: timed out, or a wait that ended empty
	KindChecksFailed             // 8: verification checks failed
	// KindRemote is an error another program reported as its answer (an
	// MCP tool's isError result): it answered, so the failure is its own,
	// not lm's (HTTP 502). It exits 1, as an internal error does.
	KindRemote
)

// ExitCode is the process exit status for errors of this kind.
func (k Kind) ExitCode() int {
	if k == KindRemote {
		return KindInternal.ExitCode()
	}
	return int(k)
}

// Category is the default error_category for the kind.
func (k Kind) Category() string {
	switch k {
	case KindInvalid:
		return "invalid_input"
	case KindNotFound:
		return "not_found"
	case KindConflict:
		return "conflict"
	case KindDenied:
		return "denied"
	case KindUnavailable:
		return "unavailable"
	case KindTimeout:
		return "timeout"
	case KindChecksFailed:
		return "checks_failed"
	case KindRemote:
		return "tool_error"
	default:
		return "internal"
	}
}

// Recoverable reports whether retrying, possibly with corrected input, can
// succeed. Internal errors are the only ones a retry will not fix, and lm
// cannot tell whether a remote one's would.
func (k Kind) Recoverable() bool { return k != KindInternal && k != KindRemote }

// Error is an error with a kind, an optional specific category (for example
// "file_not_found" or "model_unavailable") and an optional hint that tells the
// user what would be accepted or what to do next.
type Error struct {
	Kind     Kind
	Category string
	Hint     string
	Err      error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an [Error] of the given kind with a formatted message; %w
// wraps as with fmt.Errorf.
func Errorf(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Err: fmt.Errorf(format, args...)}
}

// WithHint returns e with its hint set.
func (e *Error) WithHint(format string, args ...any) *Error {
	e.Hint = fmt.Sprintf(format, args...)
	return e
}

// WithCategory returns e with a specific error_category.
func (e *Error) WithCategory(c string) *Error {
	e.Category = c
	return e
}

// KindOf returns the kind of the first [Error] in err's chain, classifying
// the store's and the context's errors too; otherwise [KindInternal].
func KindOf(err error) Kind {
	if err == nil {
		return KindOK
	}
	if e := classify(err); e != nil {
		return e.Kind
	}
	return KindInternal
}

// classify finds the [Error] describing err, if any.
func classify(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var locked *store.LockedError
	if errors.As(err, &locked) {
		if locked.Foreign {
			return &Error{Kind: KindUnavailable, Category: "store_locked", Err: err,
				Hint: fmt.Sprintf("a program other than lm has locked the file (find it with: fuser -v %s); close it and retry", locked.Path)}
		}
		return &Error{Kind: KindUnavailable, Category: "store_locked", Err: err,
			Hint: "another lm process is holding the store; retry, or raise --lock-timeout (LM_LOCK_TIMEOUT)"}
	}
	var version *store.VersionError
	if errors.As(err, &version) {
		return &Error{Kind: KindUnavailable, Category: "store_version", Err: err}
	}
	var corrupt *store.CorruptError
	if errors.As(err, &corrupt) {
		return &Error{Kind: KindChecksFailed, Category: "store_corrupt", Err: err, Hint: damageHint}
	}
	var unsound *store.UnsoundError
	if errors.As(err, &unsound) {
		return &Error{Kind: KindUnavailable, Category: "store_damaged", Err: err, Hint: damageHint}
	}
	var unwritable *store.UnwritableError
	if errors.As(err, &unwritable) {
		return &Error{Kind: KindUnavailable, Category: "store_unwritable", Err: err,
			Hint: "the file system refused the write (read-only, full, over a quota or ulimit -f, or not yours); nothing was written"}
	}
	var file *store.FileError
	if errors.As(err, &file) {
		return &Error{Kind: KindUnavailable, Category: "store_unusable", Err: err,
			Hint: "point --store (LM_STORE) at a regular file, or at a path where lm may create one"}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &Error{Kind: KindTimeout, Category: "cancelled", Err: err}
	}
	return nil
}

// damageHint is the way out of a damaged store, for every error that meets one.
const damageHint = "lm store check lists the damage; lm store salvage FILE copies every readable record into a fresh store, " +
	"and lm store restore FILE puts it (or a copy from lm store backup) in place"

// Envelope is the JSON shape of an error, shared by --json-errors on the CLI
// and by isError results over MCP.
type Envelope struct {
	Success       bool   `json:"success"`
	Error         string `json:"error"`
	ErrorCategory string `json:"error_category"`
	Recoverable   bool   `json:"recoverable"`
	Suggestion    string `json:"suggestion,omitempty"`
	ExitCode      int    `json:"exit_code"`
}

// Kind is the kind of the error an envelope describes, as another lm
// process (a gateway, lm's own tools through a server) reported it: its
// exit code, or a remote error by its category, which shares exit code 1
// with internal errors.
func (e Envelope) Kind() Kind {
	switch {
	case e.ExitCode == KindRemote.ExitCode() && e.ErrorCategory == KindRemote.Category():
		return KindRemote
	case e.ExitCode > int(KindOK) && e.ExitCode <= int(KindChecksFailed):
		return Kind(e.ExitCode)
	default:
		return KindInternal
	}
}

// EnvelopeOf describes err as an [Envelope].
func EnvelopeOf(err error) Envelope {
	kind := KindOf(err)
	env := Envelope{Error: err.Error(), ErrorCategory: kind.Category(), Recoverable: kind.Recoverable(), ExitCode: kind.ExitCode()}
	if e := classify(err); e != nil {
		if e.Category != "" {
			env.ErrorCategory = e.Category
		}
		env.Suggestion = e.Hint
	}
	return env
}
