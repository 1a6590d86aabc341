package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"lmtool.dev/lm/pkg/queue"
)

// This file is what `lm store info` and `lm store check` read of a queue's
// database. They connect without Open's schema check: info reports an
// older or newer schema rather than refusing it, and check says why it
// cannot judge one.

// Summary is what `lm store info` says of a queue's database.
type Summary struct {
	Backend       string `json:"backend" jsonschema:"postgres"`
	Where         string `json:"where" jsonschema:"the database URL with its password masked"`
	Server        string `json:"server_version" jsonschema:"PostgreSQL's version"`
	SchemaVersion int    `json:"schema_version" jsonschema:"the schema the database holds; 0 before lm store migrate"`
	BinarySchema  int    `json:"binary_schema_version" jsonschema:"the schema this lm reads and writes"`
	Identity      string `json:"identity,omitempty" jsonschema:"names the queue; event ids continue only within one"`
	Pending       int64  `json:"pending_count"`
	Consumed      int64  `json:"consumed_count"`
	Agents        int64  `json:"agents"`
	EventsKept    int64  `json:"events_kept" jsonschema:"events still in the log (older ones are trimmed)"`
	LastEvent     int64  `json:"last_event_id"`
	SizeBytes     int64  `json:"size_bytes" jsonschema:"what lm's tables and their indexes take on disk"`
}

// Describe reads the summary of the queue's database at raw.
func Describe(ctx context.Context, raw string) (Summary, error) {
	pool, shown, err := connect(ctx, raw)
	if err != nil {
		return Summary{}, err
	}
	defer pool.Close()
	s := &Storage{pool: pool, shown: shown}
	out := Summary{Backend: "postgres", Where: shown, BinarySchema: SchemaVersion}
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&out.Server); err != nil {
		return Summary{}, s.fault(err)
	}
	if out.SchemaVersion, err = version(ctx, pool); err != nil || out.SchemaVersion != SchemaVersion {
		// Another schema's tables are not this lm's to read.
		return out, s.fault(err)
	}
	err = snapshot(ctx, pool, func(t pgx.Tx, q *tx) error {
		// The newest event id as the queue itself reads it.
		out.LastEvent = int64(q.LastEvent())
		if q.err != nil {
			return q.err
		}
		return t.QueryRow(ctx, `SELECT (SELECT identity FROM lm_queue_meta),
				count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'consumed'),
				(SELECT count(*) FROM lm_queue_agents), (SELECT count(*) FROM lm_queue_events),
				(SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
					WHERE c.relkind IN ('r', 'S') AND c.relnamespace = current_schema()::regnamespace
					AND (c.relname LIKE 'lm\_queue\_%' OR c.relname = 'lm_schema'))
			FROM lm_queue_items`).
			Scan(&out.Identity, &out.Pending, &out.Consumed, &out.Agents, &out.EventsKept, &out.SizeBytes)
	})
	if err != nil {
		return Summary{}, s.fault(err)
	}
	return out, nil
}

// snapshot runs fn in one read-only REPEATABLE READ transaction, so all it
// reads agrees while writers carry on. q reads through the queue's own
// transaction code (the stored counters, the newest event id), on the
// same snapshot, so what the schema keeps where is said in one place.
func snapshot(ctx context.Context, pool *pgxpool.Pool, fn func(t pgx.Tx, q *tx) error) error {
	return pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(t pgx.Tx) error {
		return fn(t, &tx{ctx: ctx, conn: t.Conn()})
	})
}

// Report is what `lm store check` found in a queue's database.
type Report struct {
	Where         string   `json:"where" jsonschema:"the database URL with its password masked"`
	SchemaVersion int      `json:"schema_version"`
	OK            bool     `json:"ok"`
	Problems      []string `json:"problems"`
}

// maxProblems bounds a report, as the local store's check does: a broken
// invariant can hold for every row.
const maxProblems = 100

// Check verifies what the schema promises and a constraint cannot state:
// one schema row, one meta row and a row of counts per slot; each consumed instruction with
// its agent and time, and no pending one with them; orders unique among
// the pending; the counts (instructions and events) equal to what is stored; event ids within the
// sequence; and every record readable as lm reads it. It reads one
// snapshot, so writers working meanwhile never show as damage. A schema
// other than this lm's is an error (exit 6), not a problem: its
// invariants are another lm's to check.
func Check(ctx context.Context, raw string) (Report, error) {
	pool, shown, err := connect(ctx, raw)
	if err != nil {
		return Report{}, err
	}
	defer pool.Close()
	s := &Storage{pool: pool, shown: shown}
	if err := s.checkSchema(ctx); err != nil {
		return Report{}, err
	}
	out := Report{Where: shown, SchemaVersion: SchemaVersion, Problems: []string{}}
	report := func(format string, args ...any) {
		switch {
		case len(out.Problems) < maxProblems:
			out.Problems = append(out.Problems, fmt.Sprintf(format, args...))
		case len(out.Problems) == maxProblems:
			out.Problems = append(out.Problems, "more problems not listed")
		}
	}
	err = snapshot(ctx, pool, func(t pgx.Tx, q *tx) error {
		for _, c := range invariants {
			found, err := pgx.CollectRows(query(ctx, t, c.query), pgx.RowTo[string])
			if err != nil {
				return fmt.Errorf("check %s: %w", c.what, err)
			}
			for _, f := range found {
				report("%s: %s", c.what, f)
			}
		}
		if err := counters(ctx, t, q, report); err != nil {
			return err
		}
		return readable(ctx, t, report)
	})
	if err != nil {
		return Report{}, s.fault(err)
	}
	out.OK = len(out.Problems) == 0
	return out, nil
}

// invariants are queries that return one line per violation.
var invariants = []struct{ what, query string }{
	{"lm_schema must hold one row", `SELECT count(*) || ' rows' FROM lm_schema HAVING count(*) <> 1`},
	{"lm_queue_meta must hold one row", `SELECT count(*) || ' rows' FROM lm_queue_meta HAVING count(*) <> 1`},
	// A commit adds to the slot its backend picks: a missing slot drops
	// what its commits count.
	{"lm_queue_counts must hold one row per slot (0 to 15)", `SELECT count(*) || ' rows, slots ' || coalesce(string_agg(slot::text, ',' ORDER BY slot), 'none')
		FROM lm_queue_counts HAVING count(*) <> ` + fmt.Sprint(countSlots) + ` OR min(slot) <> 0 OR max(slot) <> ` + fmt.Sprint(countSlots-1)},
	// Trimming goes by the events counted: a count off by some drops kept
	// events or keeps too many.
	{"the events counted disagree with those stored", `SELECT (SELECT coalesce(sum(events), 0) FROM lm_queue_counts) || ' counted, ' || count(*) || ' stored'
		FROM lm_queue_events HAVING count(*) <> (SELECT coalesce(sum(events), 0) FROM lm_queue_counts)`},
	{"a consumed instruction lacks its agent or time", `SELECT id FROM lm_queue_items
		WHERE status = 'consumed' AND (consumed_by IS NULL OR consumed_by = '' OR consumed_at IS NULL) ORDER BY id LIMIT 101`},
	{"a pending instruction carries a consumer", `SELECT id FROM lm_queue_items
		WHERE status = 'pending' AND (consumed_by IS NOT NULL OR consumed_at IS NOT NULL OR unacknowledged OR consumer IS NOT NULL) ORDER BY id LIMIT 101`},
	{"pending instructions share an order", `SELECT ord || ': ' || string_agg(id, ', ' ORDER BY id) FROM lm_queue_items
		WHERE status = 'pending' GROUP BY ord HAVING count(*) > 1 ORDER BY ord LIMIT 101`},
	{"an instruction has no order", `SELECT id FROM lm_queue_items WHERE status = 'pending' AND ord <= 0 ORDER BY id LIMIT 101`},
	{"an agent's record names another agent", `SELECT agent_id FROM lm_queue_agents
		WHERE agent->>'agent_id' IS DISTINCT FROM agent_id ORDER BY agent_id LIMIT 101`},
}

// counters compares the counts and the event sequence the queue keeps
// with what is stored.
func counters(ctx context.Context, t pgx.Tx, q *tx, report func(string, ...any)) error {
	pending, consumed := q.Counts()
	last := q.LastEvent()
	if q.err != nil {
		return q.err
	}
	var stored struct{ pending, consumed int }
	if err := t.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'consumed')
		FROM lm_queue_items`).Scan(&stored.pending, &stored.consumed); err != nil {
		return err
	}
	if pending != stored.pending || consumed != stored.consumed {
		report("the counters disagree with what is stored: they count %d pending and %d consumed, the table holds %d and %d",
			pending, consumed, stored.pending, stored.consumed)
	}
	// Events committed but not yet final lie beyond the newest final one
	// (last); none lies beyond what a transaction this snapshot sees could
	// have given.
	var ceiling int64
	if err := t.QueryRow(ctx, "SELECT "+idCeiling).Scan(&ceiling); err != nil {
		return err
	}
	beyond, err := pgx.CollectRows(query(ctx, t,
		`SELECT id::text FROM lm_queue_events WHERE id >= $1 OR id <= 0 ORDER BY id LIMIT 101`, ceiling), pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, id := range beyond {
		report("an event's id is outside those transactions gave (1 to %d; the newest readable is %d): %s", ceiling-1, last, id)
	}
	return nil
}

// readable reads every instruction, agent and the settings as the queue
// does, reporting each record it would reject.
func readable(ctx context.Context, t pgx.Tx, report func(string, ...any)) error {
	rows, err := t.Query(ctx, "SELECT "+columns+" FROM lm_queue_items ORDER BY id")
	if err != nil {
		return err
	}
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			report("instruction %s cannot be read: %v", r.ID, err)
			continue
		}
		if strings.TrimSpace(r.Content) == "" {
			report("instruction %s is empty", r.ID)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	agents, err := t.Query(ctx, "SELECT agent_id, agent::text FROM lm_queue_agents ORDER BY agent_id")
	if err != nil {
		return err
	}
	for agents.Next() {
		var id, raw string
		if err := agents.Scan(&id, &raw); err != nil {
			return err
		}
		var a queue.Agent
		if err := json.Unmarshal([]byte(raw), &a); err != nil {
			report("agent %s cannot be read: %v", id, err)
		}
	}
	if err := agents.Err(); err != nil {
		return err
	}
	var settings []byte
	err = t.QueryRow(ctx, "SELECT settings::text FROM lm_queue_settings").Scan(&settings)
	if err == pgx.ErrNoRows {
		return nil // none stored yet: the defaults hold
	}
	if err != nil {
		return err
	}
	s := queue.DefaultSettings()
	if err := json.Unmarshal(settings, &s); err != nil {
		report("the queue settings cannot be read: %v", err)
	}
	return nil
}
