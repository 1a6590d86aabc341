package queue

import (
	"context"

	"lmtool.dev/lm/pkg/op"
)

// pendingIDs are the ids shell completion offers: the pending instructions,
// the only ones show, edit, rm and move can change or usefully name.
func pendingIDs(ctx context.Context, env *op.Env) []string {
	var ids []string
	view(ctx, env, func(t *tx) error {
		for _, in := range t.pending(0) {
			ids = append(ids, in.ID)
		}
		return nil
	})
	return ids
}

// Suggest offers pending instruction ids.
func (IDInput) Suggest(ctx context.Context, env *op.Env, field string) []string {
	return pendingIDs(ctx, env)
}

// Suggest offers pending instruction ids.
func (EditInput) Suggest(ctx context.Context, env *op.Env, field string) []string {
	if field != "id" {
		return nil
	}
	return pendingIDs(ctx, env)
}

// Suggest offers pending instruction ids.
func (MoveInput) Suggest(ctx context.Context, env *op.Env, field string) []string {
	if field != "id" {
		return nil
	}
	return pendingIDs(ctx, env)
}
