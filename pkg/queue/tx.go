package queue

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"github.com/oklog/ulid/v2"

	"lmtool.dev/lm/pkg/op"
)

// tx is a transaction as the operations see it: the storage's [Tx], the
// time it runs at, and the settings a queue starts with.
type tx struct {
	Tx
	now time.Time
	// seed are the settings of a queue that has none stored yet.
	seed Settings
}

func update(ctx context.Context, env *op.Env, fn func(t *tx) error) error {
	s, err := storage(ctx, env)
	if err != nil {
		return err
	}
	return s.Update(ctx, inTx(env, fn))
}

// inTx is fn as the operations run it on a storage's write transaction.
func inTx(env *op.Env, fn func(t *tx) error) func(Tx) error {
	return func(b Tx) error {
		t, err := newTx(b, env)
		if err != nil {
			return err
		}
		if _, ok := b.Settings(); !ok && b.Err() == nil {
			// The first write to a queue keeps the settings it was
			// started with, so every later process reads the same ones.
			if err := b.PutSettings(t.seed); err != nil {
				return err
			}
		}
		err = fn(t)
		if b.Err() != nil {
			return b.Err()
		}
		return err
	}
}

func view(ctx context.Context, env *op.Env, fn func(t *tx) error) error {
	s, err := storage(ctx, env)
	if err != nil {
		return err
	}
	return s.View(ctx, func(b Tx) error {
		t, err := newTx(b, env)
		if err != nil {
			return err
		}
		err = fn(t)
		if b.Err() != nil {
			return b.Err()
		}
		return err
	})
}

// newTx wraps a transaction; while the queue holds no settings yet, they
// are the ones seeded from the environment.
func newTx(b Tx, env *op.Env) (*tx, error) {
	t := &tx{Tx: b, now: env.Now().UTC(), seed: DefaultSettings()}
	if _, ok := b.Settings(); ok {
		return t, nil
	}
	var err error
	t.seed, err = seededSettings(env)
	return t, err
}

func (t *tx) settings() Settings {
	if s, ok := t.Settings(); ok {
		return s
	}
	return t.seed
}

// pending returns pending instructions in queue order; limit 0 means all.
func (t *tx) pending(limit int) []Instruction {
	var out []Instruction
	for i, r := range t.Pending(limit) {
		out = append(out, r.instruction(i+1))
	}
	return out
}

// consumed returns consumed instructions, oldest consumed first; with limit
// > 0 only the most recent limit of them.
func (t *tx) consumed(limit int) []Instruction {
	var out []Instruction
	for _, r := range t.Consumed(limit) {
		out = append(out, r.instruction(0))
	}
	return out
}

// record makes a new pending instruction.
func (t *tx) record(content string, order uint64) Record {
	return Record{
		ID:        ulid.MustNew(ulid.Timestamp(t.now), ulid.DefaultEntropy()).String(),
		Content:   content,
		Status:    StatusPending,
		CreatedAt: t.now,
		UpdatedAt: t.now,
		Order:     order,
	}
}

// consume marks a pending instruction consumed by agent. With unconfirmed
// it stays unacknowledged, naming this process as its consumer, until the
// face confirms that its reply reached the agent (see acknowledge).
func (t *tx) consume(r Record, agent string, unconfirmed bool) (Record, error) {
	now := t.now
	r.Status = StatusConsumed
	r.ConsumedAt = &now
	r.ConsumedByAgentID = &agent
	r.UpdatedAt = now
	if unconfirmed {
		r.Unacknowledged, r.Consumer = true, self()
	}
	if err := t.Replace(r); err != nil {
		return r, err
	}
	r.Version++
	return r, nil
}

// agents returns every agent, most recently seen first, with the derived
// waiting and connected flags.
func (t *tx) agents(staleAfter int) []Agent {
	out := t.Agents()
	for i := range out {
		out[i] = out[i].derive(t.now, staleAfter)
	}
	sortAgents(out)
	return out
}

// derive fills the flags that depend on the time of reading.
func (a Agent) derive(now time.Time, staleAfter int) Agent {
	a.Waiting = a.WaitingUntil != nil && now.Before(*a.WaitingUntil)
	a.Connected = a.Waiting || now.Sub(a.LastSeenAt) <= time.Duration(staleAfter)*time.Second
	return a
}

func sortAgents(a []Agent) {
	sort.Slice(a, func(i, j int) bool { return a[i].LastSeenAt.After(a[j].LastSeenAt) })
}

func (t *tx) emit(typ string, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return t.Emit(typ, t.now, raw)
}

// emitEach records an event of typ for each instruction, as a change to
// many (an add, a move of the whole list) does. Beyond the retention
// window only the last EventRetention are recorded and the rest skipped:
// they would be trimmed at once, a reader resuming from before them is
// told to resync, and no transaction grows past what a store records in
// one.
func (t *tx) emitEach(typ string, items []Instruction) error {
	unrecorded := len(items) - EventRetention
	if err := t.SkipEvents(unrecorded); err != nil {
		return err
	}
	for _, item := range items[max(unrecorded, 0):] {
		if err := t.emit(typ, item); err != nil {
			return err
		}
	}
	return nil
}

// emitAgent records a status.changed event with the agent as it stands now.
func (t *tx) emitAgent(a Agent) error {
	return t.emit(EventStatusChanged, a.derive(t.now, t.settings().AgentStaleAfterSeconds))
}
