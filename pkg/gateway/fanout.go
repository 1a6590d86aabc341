package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"lmtool.dev/lm/pkg/guard"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/queue"
)

// The fanout reads the queue's feed (the events any process commits, and
// agents turning idle: see [queue.Feed]) once per change, and fans it out
// to every open event stream, so a hundred open pages cost one store read
// per change, not a hundred, and every page sees what `lm queue watch`
// prints.
//
// While no stream is open nobody waits for a change, and the log is the
// only reader: the fanout then reads at most once per quietFollow, however
// many commits other processes make meanwhile, so an idle gateway costs
// next to nothing per outside commit and still logs every change once.
type fanout struct {
	env *op.Env
	log *slog.Logger

	// kick asks run for a full look at once: a first subscriber needs
	// the agents' state, which nobody kept current while none listened.
	kick chan struct{}

	mu          sync.Mutex
	subscribers int             // open event streams
	behind      bool            // a change has not been read yet
	reading     bool            // a read is under way
	caughtUp    []chan struct{} // closed when a read ends: joining streams
	cursor      uint64          // newest store event read
	seq         uint64          // newest item's fanout sequence
	buf         []item          // recent items, oldest first
	wake        chan struct{}   // closed and replaced when items arrive

	feed *queue.Feed // read by run only
}

// item is one event as the fanout delivers it. Stored events carry the
// store's sequence id; derived ones (an agent gone idle) have none.
type item struct {
	seq    uint64
	ev     queue.Event
	stored bool
}

// fanoutBuffer is how many recent items a stream can lag behind, at least,
// before it catches up from the store instead.
const fanoutBuffer = 4096

// quietFollow is how long the fanout lets changes pile up before reading
// them while no stream is open.
var quietFollow = time.Second

func newFanout(env *op.Env, log *slog.Logger) *fanout {
	return &fanout{env: env, log: log, behind: true, kick: make(chan struct{}, 1), wake: make(chan struct{})}
}

// join counts an event stream in until leave is called. The stream may
// take its position once caughtUp is closed: by then the fanout has read every
// change committed before the join, so none of them reaches the stream as
// new. While no stream is open the fanout only reads and logs new events:
// deriving agents' state and timing their turning idle is work for
// subscribers.
func (h *fanout) join() (caughtUp <-chan struct{}, leave func()) {
	h.mu.Lock()
	h.subscribers++
	first := h.subscribers == 1
	ch := make(chan struct{})
	if h.behind || h.reading {
		h.caughtUp = append(h.caughtUp, ch)
	} else {
		close(ch)
	}
	h.mu.Unlock()
	if first {
		select {
		case h.kick <- struct{}{}:
		default:
		}
	}
	return ch, sync.OnceFunc(func() {
		h.mu.Lock()
		h.subscribers--
		h.mu.Unlock()
	})
}

// run follows the store until ctx ends.
func (h *fanout) run(ctx context.Context) {
	changes, unsubscribe, err := queue.Changes(ctx, h.env)
	if err != nil {
		h.log.Error("cannot watch the store; event streams will not update", "err", err)
		h.mu.Lock()
		h.behind = false // nothing will be read: let streams start
		h.mu.Unlock()
		h.release()
		return
	}
	defer unsubscribe()
	var idleAt time.Time
	for {
		err := guard.Call(h.log, "reading queue events", func() (err error) {
			idleAt, err = h.poll(ctx)
			return err
		})
		h.release()
		if err != nil && ctx.Err() == nil {
			h.log.Warn("reading queue events", "err", err)
			idleAt = time.Now().Add(time.Second) // try again soon
		}
		if !h.await(ctx, changes, idleAt) {
			return
		}
	}
}

// await returns when the fanout should read the store again: at once after a
// change while a stream is open, else once quietFollow has passed since
// the first unread change; and when the next agent turns idle. It returns
// false when ctx ends.
func (h *fanout) await(ctx context.Context, changes <-chan struct{}, idleAt time.Time) bool {
	var idle, quiet <-chan time.Time
	if !idleAt.IsZero() {
		t := time.NewTimer(idleAt.Sub(h.env.Now()))
		defer t.Stop()
		idle = t.C
	}
	for {
		select {
		case <-changes:
			h.mu.Lock()
			h.behind = true
			listened := h.subscribers > 0
			h.mu.Unlock()
			if listened {
				return true
			}
			if quiet == nil {
				t := time.NewTimer(quietFollow)
				defer t.Stop()
				quiet = t.C
			}
		case <-quiet:
			return true
		case <-h.kick:
			return true
		case <-idle:
			return true
		case <-ctx.Done():
			return false
		}
	}
}

// release lets the streams that joined before the last read ended take
// their position.
func (h *fanout) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reading = false
	for _, ch := range h.caughtUp {
		close(ch)
	}
	h.caughtUp = nil
}

// poll reads the feed: the events committed since the last read, and
// while a stream is open, the agents that turned idle. It returns when the
// next agent will turn idle (zero: none will, or nobody listens).
func (h *fanout) poll(ctx context.Context) (time.Time, error) {
	h.mu.Lock()
	h.behind, h.reading = false, true
	listened := h.subscribers > 0
	h.mu.Unlock()
	if h.feed == nil {
		feed, err := queue.OpenFeed(ctx, h.env, nil)
		if err != nil {
			return time.Time{}, err
		}
		h.feed = feed
		h.mu.Lock()
		h.cursor = feed.Cursor()
		h.mu.Unlock()
	}
	events, next, err := h.feed.Read(ctx, listened)
	if err != nil {
		return time.Time{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// Items are kept for streams only: one that opens later starts after
	// them, and one that opens during this read waits for it to end.
	for _, e := range events {
		stored := e.ID != 0
		if stored {
			h.logEvent(e)
			h.cursor = e.ID
		}
		if listened {
			h.appendLocked(e, stored)
		}
	}
	h.broadcastLocked()
	return next, nil
}

func (h *fanout) appendLocked(e queue.Event, stored bool) {
	h.seq++
	h.buf = append(h.buf, item{seq: h.seq, ev: e, stored: stored})
	// Trimmed a half at a time: copying the whole buffer to drop one
	// item made every append under load cost a buffer's copy.
	if len(h.buf) >= 2*fanoutBuffer {
		h.buf = append(h.buf[:0:0], h.buf[len(h.buf)-fanoutBuffer:]...)
	}
}

func (h *fanout) broadcastLocked() {
	if len(h.buf) > 0 && h.buf[len(h.buf)-1].seq == h.seq {
		close(h.wake)
		h.wake = make(chan struct{})
	}
}

// position is where a new stream joins: the newest item and the newest
// store event already read.
func (h *fanout) position() (seq, cursor uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq, h.cursor
}

// after returns the items after seq and a channel closed when more arrive;
// ok is false when seq has left the buffer and the stream must catch up
// from the store.
func (h *fanout) after(seq uint64) (items []item, wake <-chan struct{}, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if seq == h.seq {
		return nil, h.wake, true
	}
	if len(h.buf) == 0 || h.buf[0].seq > seq+1 {
		return nil, h.wake, false
	}
	i := int(seq + 1 - h.buf[0].seq)
	return append([]item(nil), h.buf[i:]...), h.wake, true
}

// logEvent writes a change to the gateway's log, whichever process made
// it, so the log tells each instruction's life (created, edited, deleted,
// consumed by whom) and each agent's calls beside the gateway's requests.
func (h *fanout) logEvent(e queue.Event) {
	var d struct {
		ID             string     `json:"id"`
		ConsumedBy     string     `json:"consumed_by_agent_id"`
		AgentID        string     `json:"agent_id"`
		LastResultType string     `json:"last_result_type"`
		WaitingUntil   *time.Time `json:"waiting_until"`
	}
	json.Unmarshal(e.Data, &d)
	switch e.Type {
	case queue.EventStatusChanged:
		h.log.Info("agent", "event", e.ID, "agent_id", d.AgentID, "waiting", d.WaitingUntil != nil, "last_result", d.LastResultType)
	case queue.EventConfigUpdated:
		h.log.Info("settings changed", "event", e.ID, "settings", string(e.Data))
	case queue.EventConsumed:
		h.log.Info("instruction consumed", "event", e.ID, "id", d.ID, "agent_id", d.ConsumedBy)
	default:
		h.log.Info(strings.Replace(e.Type, ".", " ", 1), "event", e.ID, "id", d.ID)
	}
}
