// Package breaker is spec 004's circuit breaker: CLOSED forwards calls;
// after Threshold consecutive failures it is OPEN and refuses them; after
// Recovery it is HALF_OPEN and lets one probe call through, whose outcome
// closes or reopens it.
package breaker

import (
	"sync"
	"time"
)

// The states.
const (
	Closed   = "CLOSED"
	Open     = "OPEN"
	HalfOpen = "HALF_OPEN"
)

// Breaker guards one server. The zero value is not usable; use New.
type Breaker struct {
	threshold int
	recovery  time.Duration
	now       func() time.Time

	mu       sync.Mutex
	state    string
	failures int
	openedAt time.Time
	probing  bool // HALF_OPEN: the one probe call is in flight
}

// New is a closed breaker.
func New(threshold int, recovery time.Duration, now func() time.Time) *Breaker {
	return &Breaker{threshold: threshold, recovery: recovery, now: now, state: Closed}
}

// Allow reports whether a call may go through; when not, retryAt is when
// the breaker will let a probe through.
func (b *Breaker) Allow() (ok bool, retryAt time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == Open && !b.now().Before(b.openedAt.Add(b.recovery)) {
		b.state, b.probing = HalfOpen, false
	}
	switch b.state {
	case Closed:
		return true, time.Time{}
	case HalfOpen:
		if b.probing {
			return false, b.now() // the probe's answer decides; ask again soon
		}
		b.probing = true
		return true, time.Time{}
	}
	return false, b.openedAt.Add(b.recovery)
}

// Success records a call that reached the server and got an answer.
func (b *Breaker) Success() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.state, b.failures, b.probing = Closed, 0, false
}

// Failure records a call the server did not answer (dead, timed out).
func (b *Breaker) Failure() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	if b.state == HalfOpen || b.failures >= b.threshold {
		b.state, b.openedAt, b.probing = Open, b.now(), false
	}
}

// Configure applies new thresholds, as when the person saves new settings;
// the breaker's state and count stay, judged by the new threshold from the
// next failure on.
func (b *Breaker) Configure(threshold int, recovery time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.threshold, b.recovery = threshold, recovery
}

// State is the breaker's state, its consecutive failures and, when OPEN,
// when it will let a probe through.
func (b *Breaker) State() (state string, failures int, retryAt time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == Open {
		retryAt = b.openedAt.Add(b.recovery)
		if !b.now().Before(retryAt) {
			return HalfOpen, b.failures, time.Time{}
		}
	}
	return b.state, b.failures, retryAt
}
