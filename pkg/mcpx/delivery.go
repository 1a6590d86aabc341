package mcpx

import (
	"bytes"
	"sync"
)

// Deliveries holds work that waits until a reply has reached the client:
// over stdio, until a line carrying the reply's marker (an id unique to it)
// has been written to stdout. Its After is an [op.Env.AfterReply].
type Deliveries struct {
	mu      sync.Mutex
	waiting map[string][]func()
}

// After runs fn once a reply containing marker has been written.
func (d *Deliveries) After(marker string, fn func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.waiting == nil {
		d.waiting = map[string][]func(){}
	}
	d.waiting[marker] = append(d.waiting[marker], fn)
}

// written runs the work waiting on the markers out contains.
func (d *Deliveries) written(out []byte) {
	if d == nil {
		return
	}
	d.mu.Lock()
	var ready []func()
	for marker, fns := range d.waiting {
		if bytes.Contains(out, []byte(marker)) {
			ready = append(ready, fns...)
			delete(d.waiting, marker)
		}
	}
	d.mu.Unlock()
	for _, fn := range ready {
		fn()
	}
}
