package op

import (
	"context"
	"errors"
	"fmt"
	"net/http"

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

// contract is the error contract, one row a kind (indexed by it, so by exit
// code): what the exit status means — help's EXIT STATUS, the man pages' and
// the README's exit-code table are rendered from it — the default
// error_category in JSON errors, and the HTTP status the gateway answers with.
var contract = [...]struct {
	meaning, category string
	http              int
}{
	KindOK:           {"success", "", http.StatusOK},
	KindInternal:     {"internal or unexpected error", "internal", http.StatusInternalServerError},
	KindInvalid:      {"usage error or invalid input (nothing was written)", "invalid_input", 0}, // the route's: see HTTPStatus
	KindNotFound:     {"not found", "not_found", http.StatusNotFound},
	KindConflict:     {"conflict with the stored state (e.g. editing a consumed instruction, or one another process changed meanwhile)", "conflict", http.StatusConflict},
	KindDenied:       {"denied (allowlist, authentication, a path outside the project)", "denied", http.StatusForbidden},
	KindUnavailable:  {"unavailable (store locked past --lock-timeout, a damaged store refusing writes, the queue's database unreachable or on another schema version, model or server down)", "unavailable", http.StatusServiceUnavailable},
	KindTimeout:      {"timed out, or nothing available (a wait that ended empty)", "timeout", http.StatusGatewayTimeout},
	KindChecksFailed: {"checks failed (lm verify, lm store check, a damaged record or page met while reading the store)", "checks_failed", 0}, // the route's: see HTTPStatus
}

// ExitInterrupted is the exit status of a command interrupted by SIGINT or
// SIGTERM, as shells report SIGINT.
const ExitInterrupted = 130

// ExitStatus is a row of the exit-code table.
type ExitStatus struct {
	Code    int
	Meaning string
}

// ExitStatuses is the exit-code table every command shares.
func ExitStatuses() []ExitStatus {
	rows := make([]ExitStatus, 0, len(contract)+1)
	for k, c := range contract {
		rows = append(rows, ExitStatus{k, c.meaning})
	}
	return append(rows, ExitStatus{ExitInterrupted, "interrupted"})
}

// ExitCode is the process exit status for errors of this kind.
func (k Kind) ExitCode() int {
	if k == KindRemote {
		return KindInternal.ExitCode()
	}
	return int(k)
}

// Category is the default error_category for the kind.
func (k Kind) Category() string {
	switch {
	case k == KindRemote:
		return CategoryToolError
	case k <= KindOK || int(k) >= len(contract):
		return contract[KindInternal].category
	}
	return contract[k].category
}

// Recoverable reports whether retrying, possibly with corrected input, can
// succeed. Internal errors are the only ones a retry will not fix, and lm
// cannot tell whether a remote one's would.
func (k Kind) Recoverable() bool { return k != KindInternal && k != KindRemote }

// HTTPStatus is the status every HTTP face answers err with: its kind's,
// except where the category says whose failure it is — a tool of another
// server that failed is a bad gateway, and a damaged store is the server's
// failure, not the request's. invalid is the status for invalid input: 400
// for a body that cannot be read as the request, 422 for one that can but
// is refused.
func HTTPStatus(err error, invalid int) int {
	switch EnvelopeOf(err).ErrorCategory {
	case CategoryToolError:
		return http.StatusBadGateway
	case "store_corrupt":
		return http.StatusInternalServerError
	}
	switch k := KindOf(err); {
	case k == KindRemote:
		return http.StatusBadGateway
	case k == KindInvalid || k == KindChecksFailed:
		return invalid
	case k > KindOK && int(k) < len(contract):
		return contract[k].http
	}
	return http.StatusInternalServerError
}

// CategoryToolError is the error_category of a call to another server's
// tool that ran and reported an error.
const CategoryToolError = "tool_error"

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
