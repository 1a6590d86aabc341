package queue

import (
	"context"
	"sync"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/proc"
)

// self names this process as the consumer of what it takes.
var self = sync.OnceValue(func() *Consumer {
	p, err := proc.Self()
	if err != nil {
		return nil // unknown: the instruction is marked unconfirmed until acknowledged
	}
	return &Consumer{Process: p, Machine: proc.MachineID(), Boot: proc.BootID()}
})

// acknowledge records that the consumer wrote the instruction out, so the
// ledger no longer marks it should this process end.
func acknowledge(env *op.Env, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), env.Store.LockTimeout)
	defer cancel()
	s, err := storage(ctx, env)
	if err != nil {
		return
	}
	// Straight to the storage: a queue with a consumed instruction has its
	// settings stored already, so nothing needs reading first.
	s.Update(ctx, func(t Tx) error { return t.Acknowledge(id) })
}

// Requeue puts a consumed instruction back at the head of the queue: for
// one whose consumer ended before the agent saw it (the ledger marks it
// delivery_unconfirmed), or one the person wants done again.
func Requeue(ctx context.Context, env *op.Env, in IDInput) (ItemOutput, error) {
	var out ItemOutput
	err := update(ctx, env, func(t *tx) error {
		r, err := t.resolve(in.ID, env.Caller.Terminal)
		if err != nil {
			return err
		}
		if r.Status != StatusConsumed {
			return op.Errorf(op.KindConflict, "instruction %s is pending already", r.ID).
				WithHint("lm queue move %s --to 1 puts it first", r.ID)
		}
		r.Status, r.ConsumedAt, r.ConsumedByAgentID = StatusPending, nil, nil
		r.Unacknowledged, r.Consumer, r.UpdatedAt = false, nil, t.now
		r.Order = t.LastOrder() + OrderStep
		if err := conflictOr(t, t.Replace(r), r.ID, "requeued"); err != nil {
			return err
		}
		// Then first: every pending instruction moves down one place.
		var before []string
		ids := []string{r.ID}
		for _, p := range t.Pending(0) {
			before = append(before, p.ID)
			if p.ID != r.ID {
				ids = append(ids, p.ID)
			}
		}
		if err := conflictOr(t, t.Reorder(before, ids), r.ID, "requeued"); err != nil {
			return err
		}
		// Every pending instruction moved down one place: say so, as a move does.
		pending := t.pending(0)
		for _, item := range pending {
			if item.ID == r.ID {
				out.Item = item
			}
		}
		return t.emitEach(EventUpdated, pending)
	})
	return out, err
}
