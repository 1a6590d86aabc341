package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"lmtool.dev/lm/pkg/op"
)

// migrations are the schema's versions in order: migrations[i] moves a
// database from version i to i+1. Append; never edit one that shipped.
var migrations = []string{
	`CREATE TABLE lm_queue_items (
		id             text PRIMARY KEY,
		content        text NOT NULL,
		status         text NOT NULL CHECK (status IN ('pending', 'consumed')),
		created_at     timestamptz NOT NULL,
		updated_at     timestamptz NOT NULL,
		consumed_at    timestamptz,
		consumed_by    text,
		ord            bigint NOT NULL,
		version        bigint NOT NULL DEFAULT 0,
		unacknowledged boolean NOT NULL DEFAULT false,
		consumer       jsonb,
		CHECK (status = 'pending' OR (consumed_at IS NOT NULL AND consumed_by IS NOT NULL))
	);
	CREATE INDEX lm_queue_pending ON lm_queue_items (ord) WHERE status = 'pending';
	CREATE INDEX lm_queue_consumed ON lm_queue_items (consumed_at, id) WHERE status = 'consumed';
	CREATE TABLE lm_queue_settings (one boolean PRIMARY KEY CHECK (one), settings jsonb NOT NULL);
	CREATE TABLE lm_queue_agents (agent_id text PRIMARY KEY, agent jsonb NOT NULL);
	CREATE TABLE lm_queue_events (id bigint PRIMARY KEY, type text NOT NULL, at timestamptz NOT NULL, data json NOT NULL);
	CREATE TABLE lm_queue_meta (one boolean PRIMARY KEY CHECK (one), identity text NOT NULL, event_seq bigint NOT NULL,
		pending_count bigint NOT NULL, consumed_count bigint NOT NULL);
	INSERT INTO lm_queue_meta VALUES (true, gen_random_uuid()::text, 0, 0, 0);`,
	// Version 2 takes the counts and the event sequence off the one meta
	// row every commit locked: events take their ids from their
	// transaction's id above event_base (the last id version 1 gave), and
	// the counts live in countSlots rows each commit picks one of.
	`ALTER TABLE lm_queue_meta ADD COLUMN event_base bigint NOT NULL DEFAULT 0;
	UPDATE lm_queue_meta SET event_base = event_seq;
	CREATE TABLE lm_queue_counts (slot integer PRIMARY KEY, pending bigint NOT NULL, consumed bigint NOT NULL, events bigint NOT NULL);
	INSERT INTO lm_queue_counts SELECT s, 0, 0, 0 FROM generate_series(0, 15) s;
	UPDATE lm_queue_counts SET pending = m.pending_count, consumed = m.consumed_count,
		events = (SELECT count(*) FROM lm_queue_events) FROM lm_queue_meta m WHERE slot = 0;
	ALTER TABLE lm_queue_meta DROP COLUMN event_seq, DROP COLUMN pending_count, DROP COLUMN consumed_count;`,
}

// countSlots is how many rows the counts are spread over (version 2 made
// them): a commit adds its changes to the row its connection's backend
// picks, so concurrent commits seldom wait for one another.
const countSlots = 16

// SchemaVersion is the schema this binary reads and writes.
var SchemaVersion = len(migrations)

// version reads the database's schema version: 0 without lm's tables.
func version(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int, error) {
	var v int
	err := q.QueryRow(ctx, "SELECT version FROM lm_schema").Scan(&v)
	var pe *pgconn.PgError
	if errors.Is(err, pgx.ErrNoRows) || (errors.As(err, &pe) && pe.Code == "42P01") { // undefined_table
		return 0, nil
	}
	return v, err
}

func (s *Storage) checkSchema(ctx context.Context) error {
	v, err := version(ctx, s.pool)
	if err != nil {
		return s.fault(err)
	}
	switch {
	case v > SchemaVersion:
		return op.Errorf(op.KindUnavailable, "queue database %s has schema version %d, newer than this lm understands (%d)", s.shown, v, SchemaVersion).
			WithHint("upgrade lm on this machine to the version the other gateways run")
	case v < SchemaVersion:
		return op.Errorf(op.KindUnavailable, "queue database %s has schema version %d; this lm needs %d", s.shown, v, SchemaVersion).
			WithHint("run lm store migrate --store %s (with PGPASSWORD set) once, from one machine", s.shown)
	}
	return s.fault(s.pool.QueryRow(ctx, "SELECT identity FROM lm_queue_meta").Scan(&s.identity))
}

// MigrateOutput reports a migration.
type MigrateOutput struct {
	Backend string `json:"backend" jsonschema:"bbolt (the local file) or postgres"`
	Where   string `json:"where" jsonschema:"the file, or the database URL with its password masked"`
	From    int    `json:"from" jsonschema:"the schema version found (the local store: its version once migrated)"`
	To      int    `json:"to" jsonschema:"the schema version now"`
}

// Migrate brings the database at raw to this binary's schema, in one
// transaction that holds every other migrator off.
func Migrate(ctx context.Context, raw string) (MigrateOutput, error) {
	return migrateTo(ctx, raw, SchemaVersion)
}

// migrateTo brings the database at raw to schema version to.
func migrateTo(ctx context.Context, raw string, to int) (MigrateOutput, error) {
	pool, shown, err := connect(ctx, raw)
	if err != nil {
		return MigrateOutput{}, err
	}
	defer pool.Close()
	s := &Storage{pool: pool, shown: shown}
	out := MigrateOutput{Backend: "postgres", Where: shown, To: to}
	err = pgx.BeginFunc(ctx, pool, func(t pgx.Tx) error {
		if _, err := t.Exec(ctx, "CREATE TABLE IF NOT EXISTS lm_schema (version integer NOT NULL)"); err != nil {
			return err
		}
		if _, err := t.Exec(ctx, "LOCK TABLE lm_schema IN EXCLUSIVE MODE"); err != nil {
			return err
		}
		v, err := version(ctx, t)
		if err != nil {
			return err
		}
		out.From = v
		if v > SchemaVersion {
			return op.Errorf(op.KindUnavailable, "queue database %s has schema version %d, newer than this lm understands (%d)", shown, v, SchemaVersion).
				WithHint("upgrade lm; an older lm never downgrades a schema")
		}
		for i := v; i < to; i++ {
			if _, err := t.Exec(ctx, migrations[i]); err != nil {
				return fmt.Errorf("migrate to schema %d: %w", i+1, err)
			}
		}
		if v == 0 {
			_, err = t.Exec(ctx, "INSERT INTO lm_schema VALUES ($1)", to)
		} else {
			_, err = t.Exec(ctx, "UPDATE lm_schema SET version = $1", to)
		}
		return err
	})
	return out, s.fault(err)
}
