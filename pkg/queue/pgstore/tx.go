package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"lmtool.dev/lm/pkg/proc"
	"lmtool.dev/lm/pkg/queue"
)

// orderLock is the transaction-level advisory lock held by whoever computes
// or rewrites the pending order (adds, moves), so two adds cannot both
// append after the same last instruction.
const orderLock = 0x6c6d_7175_6575_65 // "lmqueue"

// tx implements [queue.Tx] on a pgx transaction. Queries that fail leave
// zero values and the first error in err, as the interface asks.
type tx struct {
	ctx     context.Context
	tx      pgx.Tx
	err     error
	claimed bool // a Claim reserved an instruction
	ordered bool // orderLock is held
	write   bool
	events  pendingEvents
	counted counted
	// settings caches the settings row, read several times a transaction.
	settings *queue.Settings
}

func (t *tx) Err() error { return t.err }

func (t *tx) fail(err error) {
	if t.err == nil && err != nil {
		t.err = err
	}
}

func (t *tx) exec(sql string, args ...any) error {
	_, err := t.tx.Exec(t.ctx, sql, args...)
	return err
}

const columns = "id, content, status, created_at, updated_at, consumed_at, consumed_by, ord, version, unacknowledged, consumer"

func scanRecord(row pgx.CollectableRow) (queue.Record, error) {
	var (
		r        queue.Record
		consumer []byte
		version  int64
		ord      int64
	)
	err := row.Scan(&r.ID, &r.Content, &r.Status, &r.CreatedAt, &r.UpdatedAt, &r.ConsumedAt, &r.ConsumedByAgentID, &ord, &version, &r.Unacknowledged, &consumer)
	if err != nil {
		return r, err
	}
	r.Order, r.Version = uint64(ord), uint64(version)
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	if r.ConsumedAt != nil {
		at := r.ConsumedAt.UTC()
		r.ConsumedAt = &at
	}
	if consumer != nil {
		r.Consumer = new(proc.Process)
		if err := json.Unmarshal(consumer, r.Consumer); err != nil {
			return r, err
		}
	}
	return r, nil
}

func (t *tx) records(sql string, args ...any) []queue.Record {
	rows, err := t.tx.Query(t.ctx, sql, args...)
	if err != nil {
		t.fail(err)
		return nil
	}
	out, err := pgx.CollectRows(rows, scanRecord)
	t.fail(err)
	return out
}

func (t *tx) Settings() (queue.Settings, bool) {
	if t.settings != nil {
		return *t.settings, true
	}
	// A setting stored before it existed has its default.
	s := queue.DefaultSettings()
	var raw []byte
	err := t.tx.QueryRow(t.ctx, "SELECT settings FROM lm_queue_settings").Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, false
	}
	if err == nil {
		err = json.Unmarshal(raw, &s)
	}
	t.fail(err)
	if err == nil {
		t.settings = &s
	}
	return s, err == nil
}

func (t *tx) PutSettings(s queue.Settings) error {
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	t.settings = &s
	return t.exec(`INSERT INTO lm_queue_settings (one, settings) VALUES (true, $1)
		ON CONFLICT (one) DO UPDATE SET settings = excluded.settings`, raw)
}

func (t *tx) Get(id string) (queue.Record, bool) {
	rs := t.records("SELECT "+columns+" FROM lm_queue_items WHERE id = $1", id)
	if len(rs) == 0 {
		return queue.Record{}, false
	}
	return rs[0], true
}

func (t *tx) Match(s string, tail bool, max int) []string {
	cond := "left(id, length($1)) = $1"
	if tail {
		cond = "right(id, length($1)) = $1"
	}
	rows, err := t.tx.Query(t.ctx, "SELECT id FROM lm_queue_items WHERE "+cond+" ORDER BY id LIMIT $2", s, max)
	if err != nil {
		t.fail(err)
		return nil
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	t.fail(err)
	return ids
}

// limitOf is SQL's LIMIT for the interface's limit: NULL (none) for 0.
func limitOf(limit int) *int {
	if limit <= 0 {
		return nil
	}
	return &limit
}

func (t *tx) Pending(limit int) []queue.Record {
	return t.records("SELECT "+columns+" FROM lm_queue_items WHERE status = 'pending' ORDER BY ord LIMIT $1", limitOf(limit))
}

func (t *tx) Consumed(limit int) []queue.Record {
	return t.records("SELECT * FROM (SELECT "+columns+` FROM lm_queue_items WHERE status = 'consumed'
		ORDER BY consumed_at DESC, id DESC LIMIT $1) newest ORDER BY consumed_at, id`, limitOf(limit))
}

func (t *tx) Position(order uint64) int {
	var n int
	err := t.tx.QueryRow(t.ctx, `SELECT CASE WHEN EXISTS (SELECT 1 FROM lm_queue_items WHERE status = 'pending' AND ord = $1)
		THEN (SELECT count(*) FROM lm_queue_items WHERE status = 'pending' AND ord <= $1) ELSE 0 END`, int64(order)).Scan(&n)
	t.fail(err)
	return n
}

// Counts reads the counters every commit adds its changes to (counting
// rows would read every pending instruction on every claim), plus this
// transaction's own changes.
func (t *tx) Counts() (pending, consumed int) {
	err := t.tx.QueryRow(t.ctx, "SELECT pending_count, consumed_count FROM lm_queue_meta").Scan(&pending, &consumed)
	t.fail(err)
	return pending + int(t.counted.pending), consumed + int(t.counted.consumed)
}

// counted are a transaction's changes to the counts, added to the stored
// counters as it commits.
type counted struct{ pending, consumed int64 }

func (c *counted) add(status string, delta int64) {
	if status == queue.StatusPending {
		c.pending += delta
	} else {
		c.consumed += delta
	}
}

// lockOrder takes orderLock once per transaction; a read-only transaction
// needs none.
func (t *tx) lockOrder() error {
	if t.ordered || !t.write {
		return nil
	}
	if _, err := t.tx.Exec(t.ctx, "SELECT pg_advisory_xact_lock($1)", int64(orderLock)); err != nil {
		return err
	}
	t.ordered = true
	return nil
}

func (t *tx) LastOrder() uint64 {
	if err := t.lockOrder(); err != nil {
		t.fail(err)
		return 0
	}
	var last int64
	err := t.tx.QueryRow(t.ctx, "SELECT coalesce(max(ord), 0) FROM lm_queue_items WHERE status = 'pending'").Scan(&last)
	t.fail(err)
	return uint64(last)
}

func consumerJSON(p *proc.Process) ([]byte, error) {
	if p == nil {
		return nil, nil
	}
	return json.Marshal(p)
}

func (t *tx) Insert(rs []queue.Record) error {
	rows := make([][]any, len(rs))
	for i, r := range rs {
		consumer, err := consumerJSON(r.Consumer)
		if err != nil {
			return err
		}
		rows[i] = []any{r.ID, r.Content, r.Status, r.CreatedAt, r.UpdatedAt, r.ConsumedAt, r.ConsumedByAgentID,
			int64(r.Order), int64(r.Version), r.Unacknowledged, consumer}
	}
	cols := []string{"id", "content", "status", "created_at", "updated_at", "consumed_at", "consumed_by", "ord", "version", "unacknowledged", "consumer"}
	if _, err := t.tx.CopyFrom(t.ctx, pgx.Identifier{"lm_queue_items"}, cols, pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	t.counted.pending += int64(len(rs))
	return nil
}

// Claim reserves the head of the queue with a row lock other claimers skip.
// A claimer whose snapshot still showed a row another one just consumed
// finds it gone on locking and gets no row; it looks once more, with a
// snapshot that shows the consumption.
func (t *tx) Claim() (queue.Record, bool) {
	for range 2 {
		rs := t.records("SELECT " + columns + " FROM lm_queue_items WHERE status = 'pending' ORDER BY ord LIMIT 1 FOR UPDATE SKIP LOCKED")
		if len(rs) == 1 {
			t.claimed = true
			return rs[0], true
		}
		if t.err != nil {
			break
		}
	}
	return queue.Record{}, false
}

func (t *tx) Replace(r queue.Record) error {
	consumer, err := consumerJSON(r.Consumer)
	if err != nil {
		return err
	}
	var was string
	err = t.tx.QueryRow(t.ctx, `WITH old AS (SELECT id, status FROM lm_queue_items WHERE id = $1 AND version = $2 FOR UPDATE)
		UPDATE lm_queue_items SET content = $3, status = $4, updated_at = $5, consumed_at = $6,
		consumed_by = $7, ord = $8, unacknowledged = $9, consumer = $10, version = version + 1
		FROM old WHERE lm_queue_items.id = old.id RETURNING old.status`,
		r.ID, int64(r.Version), r.Content, r.Status, r.UpdatedAt, r.ConsumedAt, r.ConsumedByAgentID, int64(r.Order), r.Unacknowledged, consumer).Scan(&was)
	if errors.Is(err, pgx.ErrNoRows) {
		return queue.ErrConflict
	}
	if err != nil {
		return err
	}
	t.counted.add(was, -1)
	t.counted.add(r.Status, 1)
	return nil
}

func (t *tx) Remove(r queue.Record) error {
	var was string
	err := t.tx.QueryRow(t.ctx, "DELETE FROM lm_queue_items WHERE id = $1 AND version = $2 RETURNING status", r.ID, int64(r.Version)).Scan(&was)
	if errors.Is(err, pgx.ErrNoRows) {
		return queue.ErrConflict
	}
	if err != nil {
		return err
	}
	t.counted.add(was, -1)
	return nil
}

// Reorder accepts a before that lacks only instructions consumed or deleted
// meanwhile; one added or moved meanwhile is a conflict.
func (t *tx) Reorder(before, ids []string) error {
	if err := t.lockOrder(); err != nil {
		return err
	}
	rows, err := t.tx.Query(t.ctx, "SELECT id FROM lm_queue_items WHERE status = 'pending' ORDER BY ord FOR UPDATE")
	if err != nil {
		return err
	}
	now, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	gone := func(id string) bool { return !slices.Contains(now, id) }
	if !slices.Equal(slices.DeleteFunc(slices.Clone(before), gone), now) {
		return queue.ErrConflict
	}
	ids = slices.DeleteFunc(slices.Clone(ids), gone)
	orders := make([]int64, len(ids))
	for i := range ids {
		orders[i] = int64(i+1) * queue.OrderStep
	}
	return t.exec(`UPDATE lm_queue_items SET ord = v.ord FROM unnest($1::text[], $2::bigint[]) AS v(id, ord)
		WHERE lm_queue_items.id = v.id`, ids, orders)
}

func (t *tx) Agent(id string) (queue.Agent, bool) {
	var a queue.Agent
	var raw []byte
	err := t.tx.QueryRow(t.ctx, "SELECT agent FROM lm_queue_agents WHERE agent_id = $1", id).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, false
	}
	if err == nil {
		err = json.Unmarshal(raw, &a)
	}
	t.fail(err)
	return a, err == nil
}

func (t *tx) PutAgent(a queue.Agent) error {
	a.Waiting, a.Connected = false, false // derived on read
	raw, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return t.exec(`INSERT INTO lm_queue_agents (agent_id, agent) VALUES ($1, $2)
		ON CONFLICT (agent_id) DO UPDATE SET agent = excluded.agent`, a.AgentID, raw)
}

func (t *tx) Agents() []queue.Agent {
	out := []queue.Agent{}
	rows, err := t.tx.Query(t.ctx, "SELECT agent FROM lm_queue_agents")
	if err != nil {
		t.fail(err)
		return out
	}
	raws, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	t.fail(err)
	for _, raw := range raws {
		var a queue.Agent
		if err := json.Unmarshal(raw, &a); err != nil {
			t.fail(err)
			return out
		}
		out = append(out, a)
	}
	return out
}

// Emit keeps the event until the transaction ends (see [tx.flush]).
func (t *tx) Emit(typ string, at time.Time, data json.RawMessage) error {
	t.events.next++
	t.events.offsets = append(t.events.offsets, t.events.next)
	t.events.types = append(t.events.types, typ)
	t.events.ats = append(t.events.ats, at)
	t.events.data = append(t.events.data, string(data))
	return nil
}

func (t *tx) SkipEvents(n int) error {
	if n > 0 {
		t.events.next += int64(n)
	}
	return nil
}

// pendingEvents are the events of a transaction, recorded as it commits.
// Offsets count from the sequence's value then, so skips stay in place.
type pendingEvents struct {
	next    int64 // the last offset taken
	offsets []int64
	types   []string
	ats     []time.Time
	data    []string
}

// flush records the transaction's events and changes to the counts, and
// sends the change notification, as late as possible: taking ids locks the sequence row
// until commit, so events commit in the order of their ids and a reader
// that saw id n has seen every id below it — and every other writer of
// events waits for that lock, for one statement and the commit.
func (t *tx) flush() error {
	e := &t.events
	if e.next == 0 && t.counted == (counted{}) {
		// Nothing a reader waits on changed (a delivery acknowledged, an
		// agent's record): no one is woken.
		return nil
	}
	var base, first int64
	err := t.tx.QueryRow(t.ctx, `WITH next AS (
			UPDATE lm_queue_meta SET event_seq = event_seq + $1,
				pending_count = pending_count + $7, consumed_count = consumed_count + $8
			RETURNING event_seq - $1 AS base, coalesce((SELECT min(id) FROM lm_queue_events), 0) AS first, pg_notify($6, '')
		), recorded AS (
			INSERT INTO lm_queue_events (id, type, at, data)
			SELECT next.base + e.off, e.type, e.at, e.data::json
			FROM next, unnest($2::bigint[], $3::text[], $4::timestamptz[], $5::text[]) AS e(off, type, at, data)
		)
		SELECT base, first FROM next`,
		e.next, e.offsets, e.types, e.ats, e.data, channel, t.counted.pending, t.counted.consumed).Scan(&base, &first)
	if err != nil {
		return err
	}
	// Drop the events older than the retention window once a whole batch
	// of them is beyond it, as the local store does.
	if oldest := base + e.next - queue.EventRetention; first > 0 && first+queue.TrimBatch <= oldest {
		_, err = t.tx.Exec(t.ctx, "DELETE FROM lm_queue_events WHERE id <= $1", oldest)
	}
	return err
}

func (t *tx) EventsSince(seq uint64, limit int) []queue.Event {
	rows, err := t.tx.Query(t.ctx, "SELECT id, type, at, data FROM lm_queue_events WHERE id > $1 ORDER BY id LIMIT $2", int64(seq), limitOf(limit))
	if err != nil {
		t.fail(err)
		return nil
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.Event, error) {
		var (
			e    queue.Event
			id   int64
			data string
		)
		err := row.Scan(&id, &e.Type, &e.Timestamp, &data)
		e.ID, e.Timestamp, e.Data = uint64(id), e.Timestamp.UTC(), json.RawMessage(data)
		return e, err
	})
	t.fail(err)
	return out
}

func (t *tx) LastEvent() uint64 {
	var seq int64
	t.fail(t.tx.QueryRow(t.ctx, "SELECT event_seq FROM lm_queue_meta").Scan(&seq))
	return uint64(seq)
}
