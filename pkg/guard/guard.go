// Package guard keeps long-running processes (the gateway, lm mcp, the
// supervisors) serving when code in one of their goroutines panics: the
// panic is logged with its stack and becomes an error of the one piece of
// work it interrupted, instead of ending every client's session.
package guard

import (
	"fmt"
	"log/slog"
	"runtime/debug"
)

// PanicError is a panic recovered from a piece of work.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("internal error: %v", e.Value) }

// Call runs fn and returns a panic in it as a [*PanicError], after logging
// it with what was being done.
func Call(log *slog.Logger, what string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			pe := &PanicError{Value: r, Stack: debug.Stack()}
			log.Error("recovered from a panic; still serving", "while", what, "panic", fmt.Sprint(r), "stack", string(pe.Stack))
			err = pe
		}
	}()
	return fn()
}

// Go runs fn in a new goroutine; a panic in it is logged, not fatal.
func Go(log *slog.Logger, what string, fn func()) {
	go Call(log, what, func() error { fn(); return nil })
}
