package queue

import (
	"context"
	"encoding/json"
	"time"

	"lmtool.dev/lm/pkg/op"
)

// Feed is the queue's history as its readers see it, one definition for
// every face that streams it (`lm queue watch`, the gateway's /api/events):
// the events any process committed, in order, each agent's waiting and
// connected flags derived at reading (the store keeps them as they were at
// the commit); and, with agents looked at, a status.changed event without
// an id (ID 0) when an agent seen connected no longer is. No process
// records an agent going idle: idleness is the passing of time.
//
// It reads the queue's [Storage] through one read transaction per
// [Feed.Read] — the events after a cursor, the settings and the agents —
// and wakes on its change notification, so it serves every backend alike.
// A Feed is not safe for concurrent use.
type Feed struct {
	env    *op.Env
	cursor uint64
	// connected holds the agents' connectivity at the last look; nil when
	// the last read did not look, so the next look announces nothing (a
	// look too old says nothing of what changed since).
	connected map[string]bool
}

// idleSlack is added to the moment an agent turns idle before looking, so
// the look falls after the moment rather than on it.
const idleSlack = 50 * time.Millisecond

// OpenFeed starts a feed after the event id since, or after the newest
// event when since is nil.
func OpenFeed(ctx context.Context, env *op.Env, since *uint64) (*Feed, error) {
	f := &Feed{env: env}
	if since != nil {
		f.cursor = *since
		return f, nil
	}
	err := view(ctx, env, func(t *tx) error { f.cursor = t.LastEvent(); return nil })
	return f, err
}

// Cursor is the id of the newest stored event the feed has read.
func (f *Feed) Cursor() uint64 { return f.cursor }

// Read returns the events committed since the last read, oldest first, and
// when agents is set, after them, the agents that turned idle since the
// last look. next is when the next connected agent turns idle (zero: none
// is connected, or agents is unset): a reader that wants idleness on time
// reads again then, even without a commit.
func (f *Feed) Read(ctx context.Context, agents bool) (events []Event, next time.Time, err error) {
	err = view(ctx, f.env, func(t *tx) error {
		s := t.settings()
		events = t.EventsSince(f.cursor, 0)
		for i, e := range events {
			events[i] = deriveAgent(e, t.now, s.AgentStaleAfterSeconds)
		}
		if !agents {
			f.connected = nil
			return nil
		}
		look := t.agents(s.AgentStaleAfterSeconds)
		seen := f.connected
		f.connected = make(map[string]bool, len(look))
		for _, a := range look {
			if seen != nil && seen[a.AgentID] && !a.Connected {
				data, err := json.Marshal(a)
				if err != nil {
					return err
				}
				events = append(events, Event{Type: EventStatusChanged, Timestamp: t.now, Data: data})
			}
			f.connected[a.AgentID] = a.Connected
			if a.Connected {
				at := a.LastSeenAt.Add(time.Duration(s.AgentStaleAfterSeconds) * time.Second)
				if a.WaitingUntil != nil && a.WaitingUntil.After(at) {
					at = *a.WaitingUntil
				}
				if at = at.Add(idleSlack); next.IsZero() || at.Before(next) {
					next = at
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	for _, e := range events {
		if e.ID != 0 {
			f.cursor = e.ID
		}
	}
	return events, next, nil
}

// Follow reads the feed until ctx ends or deliver fails: at once, then
// after every commit by any process, when an agent is due to turn idle, and
// on each receive from wake (nil: never). Each read's events, possibly
// none, go to deliver in one call. agents says whether a read looks at the
// agents (nil: always). It returns nil when ctx ends.
func (f *Feed) Follow(ctx context.Context, wake <-chan struct{}, agents func() bool, deliver func([]Event) error) error {
	changes, unsubscribe, err := Changes(ctx, f.env)
	if err != nil {
		return err
	}
	defer unsubscribe()
	for {
		events, next, err := f.Read(ctx, agents == nil || agents())
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if err := deliver(events); err != nil {
			return err
		}
		var idle <-chan time.Time
		var timer *time.Timer
		if !next.IsZero() {
			timer = time.NewTimer(next.Sub(f.env.Now()))
			idle = timer.C
		}
		select {
		case <-changes:
		case <-wake:
		case <-idle:
		case <-ctx.Done():
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// Replay returns up to limit stored events after the id since (0: no
// limit), derived as a [Feed] derives them: a stream catching up reads the
// same stored events its feed would have delivered.
func Replay(ctx context.Context, env *op.Env, since uint64, limit int) ([]Event, error) {
	var events []Event
	err := view(ctx, env, func(t *tx) error {
		stale := t.settings().AgentStaleAfterSeconds
		events = t.EventsSince(since, limit)
		for i, e := range events {
			events[i] = deriveAgent(e, t.now, stale)
		}
		return nil
	})
	return events, err
}

// deriveAgent fills in a status.changed event's waiting and connected
// flags as they stand at now, under the current settings.
func deriveAgent(e Event, now time.Time, staleAfter int) Event {
	if e.Type != EventStatusChanged {
		return e
	}
	var a Agent
	if json.Unmarshal(e.Data, &a) != nil {
		return e
	}
	if data, err := json.Marshal(a.derive(now, staleAfter)); err == nil {
		e.Data = data
	}
	return e
}
