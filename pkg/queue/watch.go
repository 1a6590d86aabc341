package queue

import (
	"context"

	"lmtool.dev/lm/pkg/op"
)

// WatchInput chooses where a watch starts and when it stops.
type WatchInput struct {
	Since *uint64 `json:"since,omitempty" jsonschema:"replay events after this id first (0: every retained event); default: only new events"`
	Count int     `json:"count,omitempty" jsonschema:"stop after this many events (0: run until interrupted)"`
}

// Watch emits queue events as they are committed by any process.
func Watch(ctx context.Context, env *op.Env, in WatchInput) (struct{}, error) {
	changes, unsubscribe, err := Changes(ctx, env)
	if err != nil {
		return struct{}{}, err
	}
	defer unsubscribe()
	var cursor uint64
	if in.Since != nil {
		cursor = *in.Since
	} else if err := view(ctx, env, func(t *tx) error { cursor = t.LastEvent(); return nil }); err != nil {
		return struct{}{}, err
	}
	sent := 0
	for {
		events, err := EventsSince(ctx, env, cursor, 1000)
		if err != nil {
			return struct{}{}, err
		}
		for _, e := range events {
			if err := env.Emit(e); err != nil {
				return struct{}{}, err
			}
			cursor = e.ID
			if sent++; in.Count > 0 && sent >= in.Count {
				return struct{}{}, nil
			}
		}
		if len(events) == 1000 {
			continue
		}
		select {
		case <-changes:
		case <-ctx.Done():
			return struct{}{}, nil
		}
	}
}

// LastEvent is the id of the newest event in the store.
func LastEvent(ctx context.Context, env *op.Env) (uint64, error) {
	var last uint64
	err := view(ctx, env, func(t *tx) error { last = t.LastEvent(); return nil })
	return last, err
}

// EventsSince returns up to limit events after the id since (0: no limit).
func EventsSince(ctx context.Context, env *op.Env, since uint64, limit int) ([]Event, error) {
	var events []Event
	err := view(ctx, env, func(t *tx) error { events = t.EventsSince(since, limit); return nil })
	return events, err
}
