package queue

import (
	"context"
	"errors"

	"lmtool.dev/lm/pkg/op"
)

// WatchInput chooses where a watch starts and when it stops.
type WatchInput struct {
	Since *uint64 `json:"since,omitempty" jsonschema:"replay events after this id first (0: every retained event); default: only new events"`
	Count int     `json:"count,omitempty" jsonschema:"stop after this many events (0: run until interrupted)"`
}

// Watch emits the queue's [Feed] as it happens: the events any process
// commits, and agents turning idle.
func Watch(ctx context.Context, env *op.Env, in WatchInput) (struct{}, error) {
	feed, err := OpenFeed(ctx, env, in.Since)
	if err != nil {
		return struct{}{}, err
	}
	sent := 0
	err = feed.Follow(ctx, nil, nil, func(events []Event) error {
		for _, e := range events {
			if err := env.Emit(e); err != nil {
				return err
			}
			if sent++; in.Count > 0 && sent >= in.Count {
				return errWatchDone
			}
		}
		return nil
	})
	if errors.Is(err, errWatchDone) {
		err = nil
	}
	return struct{}{}, err
}

// errWatchDone ends a watch that emitted the events it was asked for.
var errWatchDone = errors.New("the watch emitted its count")

// LastEvent is the id of the newest event in the store.
func LastEvent(ctx context.Context, env *op.Env) (uint64, error) {
	var last uint64
	err := view(ctx, env, func(t *tx) error { last = t.LastEvent(); return nil })
	return last, err
}

// EventsSince returns up to limit events after the id since (0: no limit),
// as stored: a [Feed] derives agents' flags at reading.
func EventsSince(ctx context.Context, env *op.Env, since uint64, limit int) ([]Event, error) {
	var events []Event
	err := view(ctx, env, func(t *tx) error { events = t.EventsSince(since, limit); return nil })
	return events, err
}
