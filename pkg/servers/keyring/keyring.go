// Package keyring keeps lm's secrets in the OS keyring: the Secret Service
// on Linux and the BSDs (gnome-keyring, KeePassXC, KWallet), the Keychain on
// macOS. Each secret is an item of the service "lm" whose account (user
// name) is the secret's name, so the platform's own tools manage them too:
//
//	secret-tool store --label='lm: NAME' service lm username NAME
//	security add-generic-password -s lm -a NAME -w
//
// No call waits longer than [Timeout]: servers and CI machines often have no
// Secret Service, and a keyring that does not answer must not stall lm.
package keyring

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zalando/go-keyring"
)

// Service is the service name every lm secret is stored under.
const Service = "lm"

// Timeout bounds every call. A healthy keyring answers in milliseconds; one
// that does not is wedged or waiting for a person to unlock it.
const Timeout = 5 * time.Second

// ErrNotFound means the keyring answered and holds no such secret.
var ErrNotFound = errors.New("not in the OS keyring")

// UnavailableError says why the keyring could not answer: no D-Bus session
// bus, no Secret Service on it, a locked keyring, no answer in time.
type UnavailableError struct{ Reason error }

func (e *UnavailableError) Error() string {
	return "the OS keyring is unavailable: " + e.Reason.Error()
}

func (e *UnavailableError) Unwrap() error { return e.Reason }

// Get returns the value of the secret name.
func Get(ctx context.Context, name string) (string, error) {
	return call(ctx, func() (string, error) { return keyring.Get(Service, name) })
}

// Set stores value as the secret name, replacing any value it had.
func Set(ctx context.Context, name, value string) error {
	_, err := call(ctx, func() (struct{}, error) { return struct{}{}, keyring.Set(Service, name, value) })
	return err
}

// Delete removes the secret name.
func Delete(ctx context.Context, name string) error {
	_, err := call(ctx, func() (struct{}, error) { return struct{}{}, keyring.Delete(Service, name) })
	return err
}

var errNoAnswer = fmt.Errorf("no answer within %v", Timeout)

// call runs do against the keyring, giving up after Timeout or when ctx
// ends. go-keyring's calls take no context (a Secret Service prompt waits
// for its signal forever), so a call that never answers is left behind in
// its goroutine rather than holding up the caller.
func call[T any](ctx context.Context, do func() (T, error)) (T, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, Timeout, errNoAnswer)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		if err := sessionBus(); err != nil {
			done <- result{err: err}
			return
		}
		v, err := do()
		done <- result{v, err}
	}()
	var zero T
	select {
	case r := <-done:
		switch {
		case r.err == nil:
			return r.v, nil
		case errors.Is(r.err, keyring.ErrNotFound):
			return zero, ErrNotFound
		case errors.Is(r.err, keyring.ErrSetDataTooBig):
			return zero, errors.New("the value is too big for the OS keyring")
		default:
			return zero, &UnavailableError{r.err}
		}
	case <-ctx.Done():
		return zero, &UnavailableError{context.Cause(ctx)}
	}
}
