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

// The hub reads the queue's feed (the events any process commits, and
// agents turning idle: see [queue.Feed]) once per change, and fans it out
// to every open event stream, so a hundred open pages cost one store read
// per change, not a hundred, and every page sees what `lm queue watch`
// prints.
type hub struct {
	env *op.Env
	log *slog.Logger

	ready chan struct{} // closed once the first read is done

	// kick asks for a read at once: a first subscriber needs the agents'
	// state, which nobody kept current while none listened.
	kick chan struct{}

	mu          sync.Mutex
	subscribers int           // open event streams
	cursor      uint64        // newest store event read
	seq         uint64        // newest item's hub sequence
	buf         []item        // recent items, oldest first
	wake        chan struct{} // closed and replaced when items arrive
}

// item is one event as the hub delivers it. Stored events carry the
// store's sequence id; derived ones (an agent gone idle) have none.
type item struct {
	seq    uint64
	ev     queue.Event
	stored bool
}

// hubBuffer is how many recent items a stream can lag behind before it
// catches up from the store instead.
const hubBuffer = 4096

func newHub(env *op.Env, log *slog.Logger) *hub {
	return &hub{env: env, log: log, ready: make(chan struct{}), kick: make(chan struct{}, 1), wake: make(chan struct{})}
}

// join counts an event stream in until leave is called. While no stream is
// open the hub only reads and logs new events: looking at agents and
// timing their turning idle is work for subscribers.
func (h *hub) join() (leave func()) {
	h.mu.Lock()
	h.subscribers++
	first := h.subscribers == 1
	h.mu.Unlock()
	if first {
		select {
		case h.kick <- struct{}{}:
		default:
		}
	}
	return sync.OnceFunc(func() {
		h.mu.Lock()
		h.subscribers--
		h.mu.Unlock()
	})
}

func (h *hub) listened() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.subscribers > 0
}

// run follows the feed until ctx ends; a failed read is logged and the
// feed read again a second later.
func (h *hub) run(ctx context.Context) {
	var feed *queue.Feed
	ready := sync.OnceFunc(func() { close(h.ready) })
	defer ready()
	for ctx.Err() == nil {
		err := guard.Call(h.log, "reading queue events", func() (err error) {
			if feed == nil {
				if feed, err = queue.OpenFeed(ctx, h.env, nil); err != nil {
					feed = nil
					return err
				}
				h.mu.Lock()
				h.cursor = feed.Cursor()
				h.mu.Unlock()
			}
			return feed.Follow(ctx, h.kick, h.listened, func(events []queue.Event) error {
				h.deliver(events)
				ready()
				return nil
			})
		})
		// Streams wait for the first read, not for a store that cannot
		// be read: they catch up once it can.
		ready()
		if err == nil || ctx.Err() != nil {
			return
		}
		h.log.Warn("reading queue events", "err", err)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
}

// deliver logs a read's stored events and hands all of them to the
// streams.
func (h *hub) deliver(events []queue.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range events {
		stored := e.ID != 0
		if stored {
			h.logEvent(e)
			h.cursor = e.ID
		}
		h.seq++
		h.buf = append(h.buf, item{seq: h.seq, ev: e, stored: stored})
	}
	if len(h.buf) > hubBuffer {
		h.buf = append(h.buf[:0:0], h.buf[len(h.buf)-hubBuffer:]...)
	}
	if len(events) > 0 {
		close(h.wake)
		h.wake = make(chan struct{})
	}
}

// position is where a new stream joins: the newest item and the newest
// store event already read.
func (h *hub) position() (seq, cursor uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq, h.cursor
}

// after returns the items after seq and a channel closed when more arrive;
// ok is false when seq has left the buffer and the stream must catch up
// from the store.
func (h *hub) after(seq uint64) (items []item, wake <-chan struct{}, ok bool) {
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
func (h *hub) logEvent(e queue.Event) {
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
