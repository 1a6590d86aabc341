package pgstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"lmtool.dev/lm/pkg/privatefile"
	"lmtool.dev/lm/pkg/store"
)

// Export is what `lm store backup` wrote of a queue's database.
type Export struct {
	File          string           `json:"file"`
	Bytes         int64            `json:"bytes"`
	Where         string           `json:"where" jsonschema:"the database URL with its password masked"`
	SchemaVersion int              `json:"schema_version"`
	Rows          map[string]int64 `json:"rows" jsonschema:"rows exported from each of lm's tables"`
}

// Backup writes a logical export of the queue's database at raw to path:
// a SQL script that psql restores into a database lm store migrate brought
// to the same schema, replacing the queue there. Every table is read in
// one snapshot, so the export is consistent while gateways keep working.
//
// lm writes the script itself rather than running pg_dump: the URL and its
// password never leave the process (no argv, no child's environment),
// nothing needs installing beside lm, and no pg_dump older than the server
// refuses to run. The script's COPY blocks are what pg_dump writes too.
func Backup(ctx context.Context, raw, path string, replace bool) (Export, error) {
	pool, shown, err := connect(ctx, raw)
	if err != nil {
		return Export{}, err
	}
	defer pool.Close()
	s := &Storage{pool: pool, shown: shown}
	if err := s.checkSchema(ctx); err != nil {
		return Export{}, err
	}
	out := Export{File: path, Where: shown, SchemaVersion: SchemaVersion, Rows: map[string]int64{}}
	err = pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(t pgx.Tx) error {
		tables, err := lmTables(ctx, t)
		if err != nil {
			return err
		}
		// A sequence carries on from where it was (none in schema 1;
		// a later one may add them).
		sequences, err := pgx.CollectRows(query(ctx, t, `SELECT format('SELECT setval(%L, %s, %s);',
				sequencename, coalesce(last_value, start_value), last_value IS NOT NULL)
			FROM pg_sequences WHERE schemaname = current_schema() AND sequencename LIKE 'lm\_%' ORDER BY sequencename`), pgx.RowTo[string])
		if err != nil {
			return err
		}
		err = privatefile.WriteFunc(path, replace, func(f *os.File) error {
			w := &counter{w: bufio.NewWriter(f)}
			fmt.Fprintf(w, `-- lm's queue, exported from %s at %s: schema version %d.
-- Restore it into a database that lm store migrate (of the same lm) brought to
-- schema version %d; it replaces the queue there, all in one transaction:
--   psql -v ON_ERROR_STOP=1 --single-transaction -f FILE 'postgres://USER@HOST/DATABASE'
-- with the password in PGPASSWORD or ~/.pgpass.
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
DO $$ BEGIN
	IF (SELECT version FROM lm_schema) IS DISTINCT FROM %d THEN
		RAISE EXCEPTION 'this export holds lm''s queue schema version %d: run lm store migrate with the lm that wrote it first';
	END IF;
END $$;
TRUNCATE %s;
`, shown, time.Now().UTC().Format(time.RFC3339), SchemaVersion, SchemaVersion, SchemaVersion, SchemaVersion, strings.Join(names(tables), ", "))
			for _, tb := range tables {
				fmt.Fprintf(w, "\nCOPY %s (%s) FROM stdin;\n", tb.name, strings.Join(tb.columns, ", "))
				tag, err := t.Conn().PgConn().CopyTo(ctx, w, fmt.Sprintf("COPY %s (%s) TO STDOUT", tb.name, strings.Join(tb.columns, ", ")))
				if err != nil {
					return fmt.Errorf("export %s: %w", tb.name, err)
				}
				out.Rows[strings.Trim(tb.name, `"`)] = tag.RowsAffected()
				fmt.Fprintf(w, "\\.\n")
			}
			for _, s := range sequences {
				fmt.Fprintln(w, s)
			}
			fmt.Fprintln(w, restoredEventBase)
			if err := w.w.Flush(); err != nil {
				return err
			}
			out.Bytes = w.n
			return w.err
		})
		if errors.Is(err, fs.ErrExist) {
			return &store.ExistsError{Path: path}
		}
		return err
	})
	if err != nil {
		var exists *store.ExistsError
		if errors.As(err, &exists) {
			return Export{}, err
		}
		return Export{}, s.fault(err)
	}
	return out, nil
}

// table is one of lm's tables with its columns, quoted for SQL.
type table struct {
	name    string
	columns []string
}

func names(ts []table) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.name
	}
	return out
}

// lmTables lists the queue's tables (lm_schema is the target's own) with
// their stored columns, as the catalog has them, so the export follows
// the schema whatever version wrote it.
func lmTables(ctx context.Context, t pgx.Tx) ([]table, error) {
	rows := query(ctx, t, `SELECT c.relname, array_agg(a.attname::text ORDER BY a.attnum)
		FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
		WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace AND c.relname LIKE 'lm\_queue\_%'
			AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
		GROUP BY c.relname ORDER BY c.relname`)
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (table, error) {
		var name string
		var cols []string
		if err := row.Scan(&name, &cols); err != nil {
			return table{}, err
		}
		tb := table{name: pgx.Identifier{name}.Sanitize()}
		for _, c := range cols {
			tb.columns = append(tb.columns, pgx.Identifier{c}.Sanitize())
		}
		return tb, nil
	})
}

// query runs sql; its error, if any, is the rows' (pgx.CollectRows
// reports it).
func query(ctx context.Context, t pgx.Tx, sql string, args ...any) pgx.Rows {
	rows, _ := t.Query(ctx, sql, args...)
	return rows
}

// counter counts what passes to w and keeps its first error.
type counter struct {
	w   *bufio.Writer
	n   int64
	err error
}

func (c *counter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}
