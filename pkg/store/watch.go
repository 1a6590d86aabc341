package store

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// watchers holds one inotify watch per store path for the whole process;
// every Watch call subscribes to it.
var (
	watchersMu sync.Mutex
	watchers   = map[string]*hub{}
)

type hub struct {
	Wakeups
	w *fsnotify.Watcher
}

// Watch returns a channel that receives a value after any process commits a
// write to the store. Sends never block: a slow reader sees one pending
// signal for many commits, so readers re-read the store after each signal.
// Call cancel to unsubscribe.
//
// Only a commit that changed something signals (see commit in store.go):
// a waiter's own look at the store, even in a write transaction, is not
// news, so waiting costs nothing between real changes.
//
// No wake-up is lost to a race with going to sleep, provided the caller
// subscribes before reading the state it waits on: the inotify watch
// exists before that read, a writer signals only after its commit is
// durable, so a commit either precedes the read (which sees it) or signals
// after the subscription (which queues it in the channel's one slot).
func (s *Store) Watch() (changes <-chan struct{}, cancel func(), err error) {
	if s.err != nil {
		return nil, nil, s.err
	}
	h, err := s.hub()
	if err != nil {
		return nil, nil, err
	}
	changes, cancel = h.Subscribe()
	return changes, cancel, nil
}

func (s *Store) hub() (*hub, error) {
	watchersMu.Lock()
	defer watchersMu.Unlock()
	if h := watchers[s.Path]; h != nil {
		return h, nil
	}
	// The lock file is made next to the store: not next to a device, a
	// directory or a dangling link, which no transaction would open either.
	if err := s.checkKind(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
		return nil, fmt.Errorf("create store directory: %w", err)
	}
	h := &hub{}
	f, err := os.OpenFile(s.LockPath(), os.O_RDWR|os.O_CREATE, 0o600)
	switch {
	case err == nil:
		f.Close()
	case !isUnwritable(err):
		return nil, fmt.Errorf("open store lock: %w", err)
	case !exists(s.LockPath()):
		// Read-only media without a lock file: no writer can exist (each
		// takes that lock first), so nothing will ever change.
		watchers[s.Path] = h
		return h, nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch store: %w", err)
	}
	if err := w.Add(s.LockPath()); err != nil {
		w.Close()
		return nil, fmt.Errorf("watch store %s: %w", s.LockPath(), err)
	}
	h.w = w
	go h.loop()
	watchers[s.Path] = h
	return h, nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func (h *hub) loop() {
	for {
		select {
		case ev, ok := <-h.w.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Write) {
				h.Broadcast()
			}
		case _, ok := <-h.w.Errors:
			if !ok {
				return
			}
			// An overflowed inotify queue lost events: wake everyone so
			// they re-read the store rather than sleep through a change.
			h.Broadcast()
		}
	}
}
