package store

import "sync"

// Wakeups fans a change out to subscribed channels as Watch promises: a
// send never blocks, and a channel holds one pending signal for however
// many changes came before its reader looked. The zero value is ready.
type Wakeups struct {
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

// Subscribe returns a channel signalled by every later Broadcast, and the
// function that ends the subscription.
func (w *Wakeups) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.subs == nil {
		w.subs = map[chan struct{}]struct{}{}
	}
	w.subs[ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(w.subs, ch)
		w.mu.Unlock()
	}
}

// Broadcast signals every subscribed channel.
func (w *Wakeups) Broadcast() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
