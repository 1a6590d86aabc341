package queue

import (
	"context"

	"lmtool.dev/lm/pkg/op"
)

// pendingIDs are the ids shell completion offers where only pending
// instructions can be named (edit, move), and with recent is true the 20
// most recently consumed after them (show, rm, requeue share one input).
func pendingIDs(ctx context.Context, env *op.Env, recent bool) []string {
	var ids []string
	view(ctx, env, func(t *tx) error {
		items := t.pending(0)
		if recent {
			items = append(items, t.consumed(20)...)
		}
		for _, in := range items {
			ids = append(ids, in.ID)
		}
		return nil
	})
	return ids
}

// Suggest offers pending, then recently consumed, instruction ids.
func (IDInput) Suggest(ctx context.Context, env *op.Env, field string) []string {
	return pendingIDs(ctx, env, true)
}

// Suggest offers pending instruction ids.
func (EditInput) Suggest(ctx context.Context, env *op.Env, field string) []string {
	if field != "id" {
		return nil
	}
	return pendingIDs(ctx, env, false)
}

// Suggest offers pending instruction ids.
func (MoveInput) Suggest(ctx context.Context, env *op.Env, field string) []string {
	if field != "id" {
		return nil
	}
	return pendingIDs(ctx, env, false)
}
