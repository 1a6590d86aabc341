package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"lmtool.dev/lm/pkg/queue"
)

// orderLock is the transaction-level advisory lock held by whoever computes
// or rewrites the pending order (adds, moves), so two adds cannot both
// append after the same last instruction.
const orderLock = 0x6c6d_7175_6575_65 // "lmqueue"

// tx implements [queue.Tx] on one connection. Queries that fail leave zero
// values and the first error in err, as the interface asks.
//
// Round trips and statements are what a transaction mostly costs, so it
// makes as few as it can. At READ COMMITTED a plain read sees the same
// inside a transaction as outside, so reads run on their own until the
// first write or lock opens the transaction; its BEGIN goes with that
// statement. Writes whose result no one reads wait in queued and go with
// the next statement, and the last of them with the COMMIT — or, in a
// transaction never opened, as one batch, which PostgreSQL runs as one
// implicit transaction. The settings every transaction reads first come
// from the process's last read and are confirmed with the next statement
// (see settings.go). A claim takes two round trips, an acknowledgement
// two.
type tx struct {
	ctx  context.Context
	s    *Storage // whose watchers a held-back read signals; may be nil
	conn *pgx.Conn
	err  error
	// opened says the statements from the next one on run inside the
	// transaction; begun, that its BEGIN was sent.
	opened bool
	begun  bool
	queued []*pgx.QueuedQuery
	// held are the instructions Claim locked, by id, at the version it
	// read: no other transaction can change them, so replacing one cannot
	// conflict and waits in queued.
	held    map[string]queue.Record
	claimed bool // a Claim reserved an instruction
	ordered bool // orderLock is held
	write   bool
	events  pendingEvents
	counted counted
	// settings and stored cache the settings and the stored counts, read
	// together, with the BEGIN or with the settings' confirmation.
	settings *queue.Settings
	loaded   bool
	stored   *counted
	// cached lets the transaction take the settings the process read
	// last; unconfirmed holds them, as stored, until the database
	// confirms them (see settings.go).
	cached      bool
	unconfirmed []byte
	// putSettings says the transaction stores settings: once it
	// commits, the process's last read is out of date.
	putSettings bool
}

func (t *tx) Err() error { return t.err }

func (t *tx) fail(err error) {
	if t.err == nil && err != nil {
		t.err = err
	}
}

// later queues a write whose result no one reads; its error, if any, is
// the transaction's at its next query or commit.
func (t *tx) later(sql string, args ...any) {
	if !t.write {
		// A read runs outside a transaction (see Storage.run): a write
		// there would commit on its own.
		t.fail(errors.New("a write in a read-only transaction"))
		return
	}
	t.queued = append(t.queued, &pgx.QueuedQuery{SQL: sql, Arguments: args})
}

// open makes the next statement run inside the transaction: a write, or a
// read that takes locks held until commit.
func (t *tx) open() { t.opened = true }

// send runs what is pending — the BEGIN, the queued writes — and then sql
// in one round trip, calling read with sql's rows.
func (t *tx) send(read func(pgx.Rows) error, sql string, args ...any) error {
	last := &pgx.QueuedQuery{SQL: sql, Arguments: args}
	if read != nil {
		last.Query(read)
	}
	return t.pipeline(last)
}

// pipeline sends the pending statements and more in one batch, opening the
// transaction first when a queued write or a lock needs it.
func (t *tx) pipeline(more ...*pgx.QueuedQuery) error {
	var qs []*pgx.QueuedQuery
	if (t.opened || len(t.queued) > 0) && !t.begun {
		qs = append(qs, &pgx.QueuedQuery{SQL: "BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE"})
		t.begun = true
	}
	if t.unconfirmed != nil {
		qs = append(qs, t.confirmation())
	}
	qs = append(append(qs, t.queued...), more...)
	t.queued = nil
	return t.batch(qs)
}

func (t *tx) batch(qs []*pgx.QueuedQuery) error {
	if len(qs) == 0 {
		return nil
	}
	return t.conn.SendBatch(t.ctx, &pgx.Batch{QueuedQueries: qs}).Close()
}

func (t *tx) exec(sql string, args ...any) error {
	return t.send(nil, sql, args...)
}

// queryRow runs a query of one row and scans it; no row is pgx.ErrNoRows.
func (t *tx) queryRow(sql string, args []any, dest ...any) error {
	found := false
	err := t.send(func(rows pgx.Rows) error {
		if !rows.Next() {
			return rows.Err()
		}
		found = true
		return rows.Scan(dest...)
	}, sql, args...)
	if err == nil && !found {
		return pgx.ErrNoRows
	}
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
		r.Consumer = new(queue.Consumer)
		if err := json.Unmarshal(consumer, r.Consumer); err != nil {
			return r, err
		}
	}
	return r, nil
}

// collect runs a query and collects its rows with scan.
func collect[T any](t *tx, scan pgx.RowToFunc[T], sql string, args ...any) []T {
	var out []T
	t.fail(t.send(func(rows pgx.Rows) error {
		var err error
		out, err = pgx.CollectRows(rows, scan)
		return err
	}, sql, args...))
	return out
}

func (t *tx) records(sql string, args ...any) []queue.Record {
	return collect(t, scanRecord, sql, args...)
}

// Settings are the settings the process read last, confirmed with the
// transaction's next statement (see settings.go); without them, a read of
// the settings and the stored counts together, which carries the BEGIN.
func (t *tx) Settings() (queue.Settings, bool) {
	if t.loaded {
		if t.settings == nil {
			return queue.DefaultSettings(), false
		}
		return *t.settings, true
	}
	if k := t.known(); k != nil {
		s := k.settings
		t.loaded, t.settings, t.unconfirmed = true, &s, k.raw
		return s, true
	}
	s := queue.DefaultSettings()
	var (
		raw    []byte
		stored counted
	)
	err := t.queryRow(readSettings, nil, &raw, &stored.pending, &stored.consumed)
	if err == nil && raw != nil {
		s, err = parseSettings(raw)
	}
	t.fail(err)
	if err != nil {
		return s, false
	}
	t.loaded, t.stored = true, &stored
	t.s.remember(raw, s)
	if raw == nil {
		return s, false
	}
	t.settings = &s
	return s, true
}

func (t *tx) PutSettings(s queue.Settings) error {
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	t.settings, t.loaded, t.putSettings = &s, true, true
	t.later(`INSERT INTO lm_queue_settings (one, settings) VALUES (true, $1)
		ON CONFLICT (one) DO UPDATE SET settings = excluded.settings`, raw)
	return nil
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
	return collect(t, pgx.RowTo[string], "SELECT id FROM lm_queue_items WHERE "+cond+" ORDER BY id LIMIT $2", s, max)
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
	t.fail(t.queryRow(`SELECT CASE WHEN EXISTS (SELECT 1 FROM lm_queue_items WHERE status = 'pending' AND ord = $1)
		THEN (SELECT count(*) FROM lm_queue_items WHERE status = 'pending' AND ord <= $1) ELSE 0 END`, []any{int64(order)}, &n))
	return n
}

// Counts are the counters every commit adds its changes to (counting rows
// would read every pending instruction on every claim), as read with the
// settings or since the order lock, plus this transaction's own changes.
func (t *tx) Counts() (pending, consumed int) {
	if t.stored == nil && t.unconfirmed != nil {
		// The settings' confirmation reads them.
		t.fail(t.pipeline())
	}
	if t.stored == nil {
		var stored counted
		if err := t.queryRow("SELECT "+sumCounts, nil, &stored.pending, &stored.consumed); err != nil {
			t.fail(err)
			return 0, 0
		}
		t.stored = &stored
	}
	return int(t.stored.pending + t.counted.pending), int(t.stored.consumed + t.counted.consumed)
}

// sumCounts reads the stored counts, which commits add to in slots.
const sumCounts = "sum(pending)::bigint, sum(consumed)::bigint FROM lm_queue_counts"

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
	t.open()
	if err := t.exec("SELECT pg_advisory_xact_lock($1)", int64(orderLock)); err != nil {
		return err
	}
	// Whoever held the lock may have added meanwhile: counts read before
	// it are read again.
	t.ordered, t.stored = true, nil
	return nil
}

func (t *tx) LastOrder() uint64 {
	if err := t.lockOrder(); err != nil {
		t.fail(err)
		return 0
	}
	var last int64
	t.fail(t.queryRow("SELECT coalesce(max(ord), 0) FROM lm_queue_items WHERE status = 'pending'", nil, &last))
	return uint64(last)
}

func consumerJSON(p *queue.Consumer) ([]byte, error) {
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
	// COPY is a protocol of its own: what is pending goes first.
	t.open()
	if err := t.pipeline(); err != nil {
		return err
	}
	if _, err := t.conn.CopyFrom(t.ctx, pgx.Identifier{"lm_queue_items"}, cols, pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	t.counted.pending += int64(len(rs))
	return nil
}

// Claim reserves the head of the queue with a row lock other claimers skip.
// A claimer whose snapshot still showed a row another one just consumed
// finds it gone on locking and gets no row; it looks once more, with a
// snapshot that shows the consumption.
func (t *tx) Claim(n int) []queue.Record {
	if n <= 0 {
		return nil
	}
	t.open()
	// A second look, once: rows another transaction had locked and then
	// released by committing are no longer pending, but rows it rolled
	// back are, and SKIP LOCKED passed them over the first time.
	for range 2 {
		rs := t.records("SELECT "+columns+" FROM lm_queue_items WHERE status = 'pending' ORDER BY ord LIMIT $1 FOR UPDATE SKIP LOCKED", n)
		if len(rs) > 0 {
			if t.held == nil {
				t.held = map[string]queue.Record{}
			}
			for _, r := range rs {
				t.held[r.ID] = r
			}
			t.claimed = true
			return rs
		}
		if t.err != nil {
			break
		}
	}
	return nil
}

const replace = `UPDATE lm_queue_items SET content = $3, status = $4, updated_at = $5, consumed_at = $6,
	consumed_by = $7, ord = $8, unacknowledged = $9, consumer = $10, version = version + 1`

func (t *tx) Replace(r queue.Record) error {
	consumer, err := consumerJSON(r.Consumer)
	if err != nil {
		return err
	}
	args := []any{r.ID, int64(r.Version), r.Content, r.Status, r.UpdatedAt, r.ConsumedAt, r.ConsumedByAgentID, int64(r.Order), r.Unacknowledged, consumer}
	was := ""
	if h, ok := t.held[r.ID]; ok && h.Version == r.Version {
		// Locked since Claim read it at this version: nothing to check.
		delete(t.held, r.ID)
		was = h.Status
		t.later(replace+" WHERE id = $1 AND version = $2", args...)
	} else {
		t.open()
		err = t.queryRow(`WITH old AS (SELECT id, status FROM lm_queue_items WHERE id = $1 AND version = $2 FOR UPDATE)
			`+replace+` FROM old WHERE lm_queue_items.id = old.id RETURNING old.status`, args, &was)
		if errors.Is(err, pgx.ErrNoRows) {
			return queue.ErrConflict
		}
		if err != nil {
			return err
		}
	}
	t.counted.add(was, -1)
	t.counted.add(r.Status, 1)
	return nil
}

// Acknowledge waits for the commit: it reads nothing and cannot conflict.
func (t *tx) Acknowledge(id string) error {
	t.later("UPDATE lm_queue_items SET unacknowledged = false, consumer = NULL, version = version + 1 WHERE id = $1 AND unacknowledged", id)
	return nil
}

func (t *tx) Remove(r queue.Record) error {
	var was string
	t.open()
	err := t.queryRow("DELETE FROM lm_queue_items WHERE id = $1 AND version = $2 RETURNING status", []any{r.ID, int64(r.Version)}, &was)
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
	now := collect(t, pgx.RowTo[string], "SELECT id FROM lm_queue_items WHERE status = 'pending' ORDER BY ord FOR UPDATE")
	if t.err != nil {
		return t.err
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
	t.later(`UPDATE lm_queue_items SET ord = v.ord FROM unnest($1::text[], $2::bigint[]) AS v(id, ord)
		WHERE lm_queue_items.id = v.id`, ids, orders)
	return nil
}

func (t *tx) Agent(id string) (queue.Agent, bool) {
	var a queue.Agent
	var raw []byte
	err := t.queryRow("SELECT agent FROM lm_queue_agents WHERE agent_id = $1", []any{id}, &raw)
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
	t.later(`INSERT INTO lm_queue_agents (agent_id, agent) VALUES ($1, $2)
		ON CONFLICT (agent_id) DO UPDATE SET agent = excluded.agent`, a.AgentID, raw)
	return nil
}

func (t *tx) Agents() []queue.Agent {
	out := []queue.Agent{}
	for _, raw := range collect(t, pgx.RowTo[[]byte], "SELECT agent FROM lm_queue_agents") {
		var a queue.Agent
		if err := json.Unmarshal(raw, &a); err != nil {
			t.fail(err)
			return out
		}
		out = append(out, a)
	}
	return out
}

// Emit keeps the event until the transaction commits (see [tx.commit]).
func (t *tx) Emit(typ string, at time.Time, data json.RawMessage) error {
	if len(t.events.types) >= maxTxEvents {
		return fmt.Errorf("a transaction records at most %d events", maxTxEvents)
	}
	t.events.types = append(t.events.types, typ)
	t.events.ats = append(t.events.ats, at)
	t.events.data = append(t.events.data, string(data))
	return nil
}

// SkipEvents drops, as this transaction commits, every event recorded
// before its own: ids here are not consecutive, so a gap cannot say that
// events went unrecorded, and a reader resuming from before it must find
// its last event gone, as when events expire.
func (t *tx) SkipEvents(n int) error {
	if n > 0 {
		t.events.skipped = true
	}
	return nil
}

// pendingEvents are the events of a transaction, recorded as it commits.
type pendingEvents struct {
	types   []string
	ats     []time.Time
	data    []string
	skipped bool
}

// Event ids. A transaction's events take the ids eventBase + xid<<eventIDBits
// + 1, 2, … from its transaction id (xid), so ids grow with transaction
// ids, without a counter every writer would queue for. An event is final
// once no transaction older than its own still runs: no event with a lower
// id can commit after it. Readers read only final events (see
// tx.EventsSince); as transaction ids stay below 2^39 for a very long
// time, ids stay below 2^53, exact in JavaScript's numbers.
const (
	eventIDBits = 14
	maxTxEvents = 1<<eventIDBits - 1
)

// eventBase is added to every event id: the last id schema version 1
// gave, so ids keep growing across the migration.
const eventBase = "(SELECT event_base FROM lm_queue_meta)"

// horizon is the lowest id an event not yet final can have: that of the
// oldest transaction running when the statement's snapshot was taken, or
// of the next one. It is taken from the statement's own snapshot, so every
// final event is visible to the statement that finds it final.
var horizon = fmt.Sprintf("(%s + (pg_snapshot_xmin(pg_current_snapshot())::text::bigint << %d))", eventBase, eventIDBits)

// restoredEventBase ends a restore: event ids come from transaction ids,
// which another cluster numbers from elsewhere, so the base rises until
// the ids of the transactions after the restore's follow the restored ones.
var restoredEventBase = fmt.Sprintf(`UPDATE lm_queue_meta SET event_base = greatest(event_base,
	(SELECT coalesce(max(id), 0) FROM lm_queue_events) - (pg_current_xact_id()::text::bigint << %d));`, eventIDBits)

// idCeiling is the lowest id no transaction the statement's snapshot sees
// as ended can have given.
var idCeiling = fmt.Sprintf("(%s + (pg_snapshot_xmax(pg_current_snapshot())::text::bigint << %d))", eventBase, eventIDBits)

// record is the statement that records the transaction's events under
// their ids and adds its changes to a slot of the counts; it returns how
// many events are stored.
const record = `WITH counted AS (
		UPDATE lm_queue_counts SET pending = pending + $5, consumed = consumed + $6, events = events + coalesce(cardinality($2::text[]), 0)
		WHERE slot = pg_backend_pid() % $7
	), recorded AS (
		INSERT INTO lm_queue_events (id, type, at, data)
		SELECT ` + eventBase + ` + (pg_current_xact_id()::text::bigint << $1) + e.n, e.type, e.at, e.data::json
		FROM unnest($2::text[], $3::timestamptz[], $4::text[]) WITH ORDINALITY AS e(type, at, data, n)
	)
	SELECT sum(events)::bigint + coalesce(cardinality($2::text[]), 0) FROM lm_queue_counts`

// dropEarlier drops the events recorded before the transaction's own
// and takes them off the count (see SkipEvents).
const dropEarlier = `WITH gone AS (
		DELETE FROM lm_queue_events WHERE id <= ` + eventBase + ` + (pg_current_xact_id()::text::bigint << $1) RETURNING 1
	)
	UPDATE lm_queue_counts SET events = events - (SELECT count(*) FROM gone) WHERE slot = pg_backend_pid() % $2`

// trim drops the oldest events beyond the retention window and takes
// them off the count. Two trims at once delete each event once: the
// later one skips rows the earlier deleted, and counts what it deleted.
const trim = `WITH gone AS (
		DELETE FROM lm_queue_events WHERE id IN (SELECT id FROM lm_queue_events ORDER BY id LIMIT $1) RETURNING 1
	)
	UPDATE lm_queue_counts SET events = events - (SELECT count(*) FROM gone) WHERE slot = pg_backend_pid() % $2`

// commit ends a write transaction in one round trip: the writes still
// queued, the events and counts (see record), the COMMIT, and then the
// NOTIFY. PostgreSQL serialises the commits of transactions that notify,
// so the notification goes in a statement of its own after the COMMIT
// rather than inside the transaction; a signal means "read again", so one
// sent just after the commit serves as well.
func (t *tx) commit() error {
	e := &t.events
	recording := len(e.types) > 0 || t.counted != (counted{})
	end := t.queued
	t.queued = nil
	var stored int64
	if recording {
		if !t.begun {
			// The NOTIFY must follow the commit: the writes become a
			// transaction of their own.
			end = append([]*pgx.QueuedQuery{{SQL: "BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE"}}, end...)
			t.begun = true
		}
		if e.skipped {
			end = append(end, &pgx.QueuedQuery{SQL: dropEarlier, Arguments: []any{eventIDBits, countSlots}})
		}
		q := &pgx.QueuedQuery{SQL: record, Arguments: []any{eventIDBits, e.types, e.ats, e.data,
			t.counted.pending, t.counted.consumed, countSlots}}
		q.QueryRow(func(row pgx.Row) error { return row.Scan(&stored) })
		end = append(end, q)
	}
	// Otherwise nothing a reader waits on changed (a delivery
	// acknowledged, an agent's record): no one is woken.
	if t.begun {
		end = append(end, &pgx.QueuedQuery{SQL: "COMMIT"})
	}
	// Else the writes, if any, are one batch: one implicit transaction.
	if recording {
		end = append(end, &pgx.QueuedQuery{SQL: "SELECT pg_notify($1, '')", Arguments: []any{channel}})
	}
	if err := t.batch(end); err != nil {
		return err
	}
	// Drop the events older than the retention window once a whole batch
	// of them is beyond it, as the local store does. A failure leaves
	// them to the next commit's trim.
	if beyond := stored - queue.EventRetention; beyond >= queue.TrimBatch {
		t.conn.Exec(t.ctx, trim, beyond, countSlots)
	}
	return nil
}

// rollback ends a write transaction that failed; the connection is
// closed rather than reused when even that fails.
func (t *tx) rollback() {
	t.queued = nil
	if t.begun {
		if _, err := t.conn.Exec(context.WithoutCancel(t.ctx), "ROLLBACK"); err != nil {
			t.conn.Close(context.WithoutCancel(t.ctx))
		}
	}
}

// EventsSince returns the final events after seq (see eventIDBits): a
// reader that read id n has read every id below it that will ever commit.
// Events committed but not yet final are left for a later read, which the
// process's watchers are signalled to make (see hub.heldBack): the
// transaction holding them back may end without a notification.
func (t *tx) EventsSince(seq uint64, limit int) []queue.Event {
	events, heldBack := t.finalEventsSince(seq, limit)
	switch {
	case t.err != nil || t.s == nil: // not run by a Storage: no watchers to signal
	case heldBack:
		t.s.hub.heldBack()
	default:
		t.s.hub.caughtUp()
	}
	return events
}

// finalEventsSince reads the events after seq up to the first one not yet
// final, and says whether there was one.
func (t *tx) finalEventsSince(seq uint64, limit int) (events []queue.Event, heldBack bool) {
	type row struct {
		queue.Event
		final bool
	}
	rows := collect(t, func(r pgx.CollectableRow) (row, error) {
		var (
			e    row
			id   int64
			data string
		)
		err := r.Scan(&id, &e.Type, &e.Timestamp, &data, &e.final)
		e.ID, e.Timestamp, e.Data = uint64(id), e.Timestamp.UTC(), json.RawMessage(data)
		return e, err
	}, "SELECT id, type, at, data, id < "+horizon+" FROM lm_queue_events WHERE id > $1 ORDER BY id LIMIT $2",
		int64(seq), limitOf(limit))
	for _, r := range rows {
		if !r.final {
			return events, true
		}
		events = append(events, r.Event)
	}
	return events, false
}

// LastEvent is the id of the newest final event: a reader starting after
// it misses none committed later.
func (t *tx) LastEvent() uint64 {
	var seq int64
	t.fail(t.queryRow("SELECT coalesce(max(id), "+eventBase+") FROM lm_queue_events WHERE id < "+horizon, nil, &seq))
	return uint64(seq)
}
