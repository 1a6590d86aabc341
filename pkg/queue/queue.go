package queue

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/duration"
	"lmtool.dev/lm/pkg/gatewayd"
	"lmtool.dev/lm/pkg/op"
)

// MaxContentBytes bounds one instruction's text.
const MaxContentBytes = 1 << 20

// checkContent rejects text no instruction may have.
func checkContent(content string) error {
	if strings.TrimSpace(content) == "" {
		return op.Errorf(op.KindInvalid, "instruction content is empty").
			WithHint("give the text as arguments, on stdin, or as \"content\"")
	}
	if len(content) > MaxContentBytes {
		return op.Errorf(op.KindInvalid, "instruction content is %d bytes; the limit is %d", len(content), MaxContentBytes)
	}
	return nil
}

// AddInput adds one or several instructions.
type AddInput struct {
	Content  string   `json:"content,omitempty" jsonschema:"the instruction text"`
	Contents []string `json:"contents,omitempty" jsonschema:"several instructions, added in this order in one transaction"`
}

// Validate rejects empty content before anything is written.
func (in *AddInput) Validate() error {
	if in.Content == "" && len(in.Contents) == 0 {
		return checkContent("")
	}
	if in.Content != "" {
		if err := checkContent(in.Content); err != nil {
			return err
		}
	}
	for i, c := range in.Contents {
		if err := checkContent(c); err != nil {
			return op.Errorf(op.KindInvalid, "instruction %d of %d: %w", i+1, len(in.Contents), err)
		}
	}
	return nil
}

// AddOutput is the created instruction, or all of them when several were added.
type AddOutput struct {
	Item  *Instruction  `json:"item,omitempty" jsonschema:"the created instruction, when one was added"`
	Items []Instruction `json:"items,omitempty" jsonschema:"the created instructions, when several were added"`
	Count int           `json:"count" jsonschema:"how many instructions were added"`
}

// Add appends instructions to the end of the queue.
func Add(ctx context.Context, env *op.Env, in AddInput) (AddOutput, error) {
	contents := in.Contents
	if in.Content != "" {
		contents = append([]string{in.Content}, contents...)
	}
	var out AddOutput
	err := update(ctx, env, func(t *tx) error {
		out = AddOutput{}
		order := t.LastOrder()
		base, _ := t.Counts()
		records := make([]Record, len(contents))
		for i, c := range contents {
			order += OrderStep
			records[i] = t.record(c, order)
		}
		if err := t.Insert(records); err != nil {
			return err
		}
		out.Items = make([]Instruction, 0, len(contents))
		for i, r := range records {
			out.Items = append(out.Items, r.instruction(base+i+1))
		}
		return t.emitEach(EventCreated, out.Items)
	})
	if err != nil {
		return AddOutput{}, err
	}
	out.Count = len(out.Items)
	if out.Count == 1 {
		out.Item, out.Items = &out.Items[0], nil
	}
	return out, nil
}

// ListInput selects instructions by status.
type ListInput struct {
	Status string `json:"status,omitempty" jsonschema:"pending, consumed or all (default all)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"list at most this many consumed instructions, the most recent (0: all)"`
}

// RefineSchema declares the accepted statuses.
func (*ListInput) RefineSchema(s *jsonschema.Schema) {
	s.Properties["status"].Enum = []any{"pending", "consumed", "all"}
	s.Properties["limit"].Minimum = ptr(0.0)
}

// Validate checks the status.
func (in *ListInput) Validate() error {
	switch in.Status {
	case "", "all", StatusPending, StatusConsumed:
		return nil
	}
	return op.Errorf(op.KindInvalid, "unknown status %q", in.Status).WithHint("use pending, consumed or all")
}

// ListOutput holds instructions: pending in queue order, then consumed in
// the order they were taken.
type ListOutput struct {
	Items []Instruction `json:"items"`
}

// List returns instructions in queue order.
func List(ctx context.Context, env *op.Env, in ListInput) (ListOutput, error) {
	out := ListOutput{Items: []Instruction{}}
	err := view(ctx, env, func(t *tx) error {
		if in.Status != StatusConsumed {
			out.Items = append(out.Items, t.pending(0)...)
		}
		if in.Status != StatusPending {
			out.Items = append(out.Items, t.consumed(in.Limit)...)
		}
		return nil
	})
	return out, err
}

// IDInput names one instruction by id (or unique id prefix on the CLI).
type IDInput struct {
	ID string `json:"id" jsonschema:"instruction id (on lm's command line, a unique prefix, a unique tail or a pending instruction's position also does)"`
}

// ItemOutput is one instruction.
type ItemOutput struct {
	Item Instruction `json:"item"`
}

// Show returns one instruction.
func Show(ctx context.Context, env *op.Env, in IDInput) (ItemOutput, error) {
	var out ItemOutput
	err := view(ctx, env, func(t *tx) error {
		r, err := t.resolve(in.ID, env.Caller.Terminal)
		if err != nil {
			return err
		}
		out.Item = r.instruction(t.Position(r.Order))
		return nil
	})
	return out, err
}

func errConsumed(r Record, verb string) error {
	return op.Errorf(op.KindConflict, "instruction %s was already consumed by %s at %s; only pending instructions can be %s",
		r.ID, deref(r.ConsumedByAgentID), r.ConsumedAt.Format(time.RFC3339), verb)
}

// EditInput replaces a pending instruction's text.
type EditInput struct {
	ID      string `json:"id" jsonschema:"instruction id (on lm's command line, a unique prefix, a unique tail or a pending instruction's position also does)"`
	Content string `json:"content" jsonschema:"the new text"`
}

// Validate rejects empty content.
func (in *EditInput) Validate() error { return checkContent(in.Content) }

// Edit changes the text of a pending instruction.
func Edit(ctx context.Context, env *op.Env, in EditInput) (ItemOutput, error) {
	var out ItemOutput
	err := update(ctx, env, func(t *tx) error {
		r, err := t.resolve(in.ID, env.Caller.Terminal)
		if err != nil {
			return err
		}
		if r.Status != StatusPending {
			return errConsumed(r, "edited")
		}
		r.Content, r.UpdatedAt = in.Content, t.now
		if err := conflictOr(t, t.Replace(r), r.ID, "edited"); err != nil {
			return err
		}
		r.Version++
		out.Item = r.instruction(t.Position(r.Order))
		return t.emit(EventUpdated, out.Item)
	})
	return out, err
}

// RemoveOutput reports a deletion.
type RemoveOutput struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// Remove deletes a pending instruction.
func Remove(ctx context.Context, env *op.Env, in IDInput) (RemoveOutput, error) {
	var out RemoveOutput
	err := update(ctx, env, func(t *tx) error {
		r, err := t.resolve(in.ID, env.Caller.Terminal)
		if err != nil {
			return err
		}
		if r.Status != StatusPending {
			return errConsumed(r, "deleted")
		}
		if err := conflictOr(t, t.Remove(r), r.ID, "deleted"); err != nil {
			return err
		}
		out = RemoveOutput{ID: r.ID, Deleted: true}
		return t.emit(EventDeleted, instructionDeleted(r.ID))
	})
	return out, err
}

// MoveInput moves a pending instruction to a new place in the queue.
type MoveInput struct {
	ID string `json:"id" jsonschema:"instruction id (on lm's command line, a unique prefix, a unique tail or a pending instruction's position also does)"`
	To int    `json:"to" jsonschema:"the new 1-based position among pending instructions"`
}

// Move reorders the pending queue.
func Move(ctx context.Context, env *op.Env, in MoveInput) (ListOutput, error) {
	var out ListOutput
	err := update(ctx, env, func(t *tx) error {
		r, err := t.resolve(in.ID, env.Caller.Terminal)
		if err != nil {
			return err
		}
		if r.Status != StatusPending {
			return errConsumed(r, "moved")
		}
		pending := t.pending(0)
		if in.To < 1 || in.To > len(pending) {
			return op.Errorf(op.KindInvalid, "position %d is out of range: there are %d pending instructions", in.To, len(pending)).
				WithHint("give --to between 1 and %d", len(pending))
		}
		before := make([]string, 0, len(pending))
		ids := make([]string, 0, len(pending))
		for _, p := range pending {
			before = append(before, p.ID)
			if p.ID != r.ID {
				ids = append(ids, p.ID)
			}
		}
		ids = append(ids[:in.To-1], append([]string{r.ID}, ids[in.To-1:]...)...)
		if err := conflictOr(t, t.Reorder(before, ids), r.ID, "moved"); err != nil {
			return err
		}
		out.Items = t.pending(0)
		return t.emitEach(EventUpdated, out.Items)
	})
	return out, err
}

// ServerStatus is the serving process: the gateway that serves the page.
type ServerStatus struct {
	Status    string    `json:"status" jsonschema:"up, or down when no gateway serves this store"`
	StartedAt time.Time `json:"started_at,omitzero" jsonschema:"when the gateway started; absent while down"`
}

// QueueCounts counts instructions.
type QueueCounts struct {
	PendingCount  int `json:"pending_count"`
	ConsumedCount int `json:"consumed_count"`
}

// StatusOutput is spec 000's /api/status document, plus every known agent.
type StatusOutput struct {
	Server    ServerStatus `json:"server"`
	Agent     *Agent       `json:"agent" jsonschema:"the most recently seen agent; null before any call"`
	Agents    []Agent      `json:"agents" jsonschema:"every agent seen, most recent first"`
	Queue     QueueCounts  `json:"queue"`
	Settings  Settings     `json:"settings"`
	LastEvent uint64       `json:"last_event_id" jsonschema:"id of the newest queue event"`
	StoreID   string       `json:"store_id" jsonschema:"names the store file; event ids continue only within one store_id"`
}

// Empty is the input of operations that take none.
type Empty struct{}

// Status summarises the queue, its settings and the agents.
func Status(ctx context.Context, env *op.Env, _ Empty) (StatusOutput, error) {
	var out StatusOutput
	err := view(ctx, env, func(t *tx) error {
		out = status(t, env.Started)
		return nil
	})
	out.StoreID = Identity(ctx, env)
	return out, err
}

// GatewayStatus is queue_status outside the gateway (lm's CLI, lm mcp):
// server says whether a gateway serves this store, not that the asking
// process runs.
func GatewayStatus(ctx context.Context, env *op.Env, in Empty) (StatusOutput, error) {
	out, err := Status(ctx, env, in)
	if err != nil {
		return out, err
	}
	out.Server = ServerStatus{Status: "down"}
	if gw, ok, _ := (gatewayd.Files{Dir: env.Home}).Running(); ok && gw.Store == env.Store.Path {
		out.Server = ServerStatus{Status: "up", StartedAt: gw.StartedAt.UTC()}
	}
	return out, nil
}

func status(t *tx, started time.Time) StatusOutput {
	s := t.settings()
	out := StatusOutput{
		Server:    ServerStatus{Status: "up", StartedAt: started.UTC()},
		Agents:    t.agents(s.AgentStaleAfterSeconds),
		Settings:  s,
		LastEvent: t.LastEvent(),
	}
	out.Queue.PendingCount, out.Queue.ConsumedCount = t.Counts()
	if len(out.Agents) > 0 {
		out.Agent = &out.Agents[0]
	}
	return out
}

// PruneInput selects consumed instructions to delete.
type PruneInput struct {
	Consumed  bool   `json:"consumed,omitempty" jsonschema:"required as a safeguard: prune consumed instructions"`
	OlderThan string `json:"older_than,omitempty" jsonschema:"only those consumed longer ago than this duration (e.g. 36h, 7d, 2w)"`
}

// Validate insists on the explicit --consumed.
func (in *PruneInput) Validate() error {
	if !in.Consumed {
		return op.Errorf(op.KindInvalid, "prune deletes consumed instructions only and needs --consumed to say so")
	}
	if in.OlderThan != "" {
		if _, err := duration.Field("older_than", in.OlderThan, 0); err != nil {
			return err
		}
	}
	return nil
}

// PruneOutput counts what was deleted.
type PruneOutput struct {
	Deleted   int `json:"deleted"`
	Remaining int `json:"remaining_consumed"`
}

// Prune deletes consumed instructions (history retention).
func Prune(ctx context.Context, env *op.Env, in PruneInput) (PruneOutput, error) {
	var out PruneOutput
	var age time.Duration
	if in.OlderThan != "" {
		age, _ = duration.Parse(in.OlderThan)
	}
	err := update(ctx, env, func(t *tx) error {
		out = PruneOutput{}
		cutoff := t.now.Add(-age)
		for _, r := range t.Consumed(0) {
			if age > 0 && !r.ConsumedAt.Before(cutoff) {
				break
			}
			if err := t.Remove(r); err != nil && !errors.Is(err, ErrConflict) {
				return err // another prune took it meanwhile: no matter
			}
			out.Deleted++
		}
		_, out.Remaining = t.Counts()
		return nil
	})
	return out, err
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func ptr[T any](v T) *T { return &v }
