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

// dropsToldEvery is how often, at most, the gateway's log says how many
// of a server's messages it dropped, so a person can tell a quiet server
// from one whose flood is cut.
const dropsToldEvery = 10 * time.Second

// logBudget is a token bucket of a server's log messages.
type logBudget struct {
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	dropped int       // since the last time they were told
	told    time.Time // when they last were
}

// take reports whether a message logged at now may pass, and when it may
// not, how many were dropped since they were last told, once that is
// dropsToldEvery ago (0 until then).
func (b *logBudget) take(now time.Time) (ok bool, tell int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last.IsZero() {
		b.tokens = logBurst
	} else {
		b.tokens = min(logBurst, b.tokens+now.Sub(b.last).Seconds()*logsPerSecond)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	b.dropped++
	if !b.told.IsZero() && now.Sub(b.told) < dropsToldEvery {
		return false, 0
	}
	tell, b.dropped, b.told = b.dropped, 0, now
	return false, tell
}
