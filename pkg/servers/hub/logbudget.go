package hub

import (
	"sync"
	"time"
)

// A server's log messages go to every session of /mcp and /mcp/NAME, each
// into a queue of 100 that a client empties as it reads. logBurst of them
// pass at once, then logsPerSecond: more than a person reads, and a server
// that logs without end neither fills every session's queue, crowding out
// the other servers' notifications, nor costs the gateway a goroutine for
// each one a full queue drops (mcp-go reports each drop in one of its own).
const (
	logBurst      = 100
	logsPerSecond = 20
)

// logBudget is a token bucket of a server's log messages.
type logBudget struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// take reports whether a message logged at now may pass.
func (b *logBudget) take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last.IsZero() {
		b.tokens = logBurst
	} else {
		b.tokens = min(logBurst, b.tokens+now.Sub(b.last).Seconds()*logsPerSecond)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
