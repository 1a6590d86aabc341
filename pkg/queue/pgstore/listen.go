package pgstore

import (
	"context"
	"sync"
	"time"

	"lmtool.dev/lm/pkg/store"
)

// hub is a process's one LISTEN connection to a queue database, fanned out
// to every Watch. It starts with the first Watch.
type hub struct {
	store.Wakeups
	s      *Storage
	mu     sync.Mutex // guards the fields below
	cancel context.CancelFunc
	done   chan struct{}
	// recheckDue says a heldBack signal is on its way, recheckIn when the
	// next one goes.
	recheckDue bool
	recheckIn  time.Duration
}

func (h *hub) init(s *Storage) {
	h.s = s
}

// Watch returns a channel signalled after every commit that changed the
// queue, from any process, and after the listener reconnects: a
// notification sent while it was away is lost, so waiters read again.
func (s *Storage) Watch() (<-chan struct{}, func(), error) {
	h := &s.hub
	h.mu.Lock()
	if h.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		h.cancel, h.done = cancel, make(chan struct{})
		ready := make(chan struct{})
		go h.listen(ctx, ready)
		h.mu.Unlock()
		// The first LISTEN is in place before Watch returns, so a change
		// committed after it signals; a slow or absent database leaves
		// the caller to its re-reads after reconnecting.
		select {
		case <-ready:
		case <-time.After(5 * time.Second):
		}
	} else {
		h.mu.Unlock()
	}
	changes, cancel := h.Subscribe()
	return changes, cancel, nil
}

// listen holds a connection that LISTENs, reconnecting with a backoff
// until ctx ends. ready is closed once the first LISTEN is in place.
func (h *hub) listen(ctx context.Context, ready chan struct{}) {
	defer close(h.done)
	signalReady := sync.OnceFunc(func() { close(ready) })
	defer signalReady()
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		if h.session(ctx, signalReady) {
			backoff = 50 * time.Millisecond
		}
		// Whatever was notified while no connection listened is lost:
		// every waiter reads again.
		h.Broadcast()
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

// session listens on one connection until it fails; it says whether LISTEN
// took effect.
func (h *hub) session(ctx context.Context, listening func()) bool {
	conn, err := h.s.pool.Acquire(ctx)
	if err != nil {
		return false
	}
	// The connection keeps a LISTEN and an unknown state: it is closed,
	// never returned to the pool.
	pc := conn.Hijack()
	defer pc.Close(context.Background())
	if _, err := pc.Exec(ctx, "LISTEN "+channel); err != nil {
		return false
	}
	listening()
	h.Broadcast() // a reconnect: what changed while away is read again
	for {
		if _, err := pc.WaitForNotification(ctx); err != nil {
			return true
		}
		h.Broadcast()
	}
}

// How soon watchers read again after a read found events committed but
// not yet final (see tx.EventsSince): soon, since that is mostly a claim
// about to commit, whose own notification often comes first; then less
// often while they stay held back, as a long transaction elsewhere in the
// cluster holds them. The signal wakes every watcher, waiting claims too,
// so even under load it goes out at most every firstRecheck.
const (
	firstRecheck = 5 * time.Millisecond
	lastRecheck  = time.Second
)

// heldBack arranges for every watcher to be signalled soon, once however
// often it is asked meanwhile: a reader held back from events reads again,
// even if no commit follows to wake it.
func (h *hub) heldBack() {
	h.mu.Lock()
	if h.recheckDue {
		h.mu.Unlock()
		return
	}
	h.recheckDue = true
	d := max(h.recheckIn, firstRecheck)
	h.recheckIn = min(2*d, lastRecheck)
	h.mu.Unlock()
	time.AfterFunc(d, func() {
		h.mu.Lock()
		h.recheckDue = false
		h.mu.Unlock()
		h.Broadcast()
	})
}

// caughtUp says a read found no event held back: the next hold is
// rechecked promptly again.
func (h *hub) caughtUp() {
	h.mu.Lock()
	h.recheckIn = 0
	h.mu.Unlock()
}

func (h *hub) stop() {
	h.mu.Lock()
	cancel, done := h.cancel, h.done
	h.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}
