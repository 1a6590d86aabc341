// Package admin holds the store's maintenance operations (`lm store …`):
// where it is, what is in it, whether it is sound, and a consistent copy.
// With the queue in a database (pgstore), info, check and backup cover
// both the local store, which keeps what is local by nature (jobs,
// servers), and the queue's database.
package admin

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/queue/pgstore"
	"lmtool.dev/lm/pkg/store"
	"lmtool.dev/lm/pkg/table"
)

// PathOutput is where the store lives.
type PathOutput struct {
	Path string `json:"path"`
	Home string `json:"home" jsonschema:"LM_HOME: config, templates and logs"`
}

func storePath(_ context.Context, env *op.Env, _ struct{}) (PathOutput, error) {
	if err := env.Store.Err(); err != nil {
		return PathOutput{}, err
	}
	return PathOutput{Path: env.Store.Path, Home: env.Home}, nil
}

// InfoOutput is the local store and, when the queue lives in a database,
// that database.
type InfoOutput struct {
	store.Info
	Queue *pgstore.Summary `json:"queue,omitempty" jsonschema:"the queue's database, when the queue is not in the local store"`
}

func info(ctx context.Context, env *op.Env, _ struct{}) (InfoOutput, error) {
	database, err := queueDatabase(env)
	if err != nil {
		return InfoOutput{}, err
	}
	local, err := env.Store.Stat(ctx)
	if err != nil || database == "" {
		return InfoOutput{Info: local}, err
	}
	summary, err := pgstore.Describe(ctx, database)
	if err != nil {
		return InfoOutput{}, err
	}
	return InfoOutput{Info: local, Queue: &summary}, nil
}

// queueDatabase is the URL of the queue's database, "" when the queue is
// in the local store; a mistake in config.toml's [store] is its error.
func queueDatabase(env *op.Env) (string, error) {
	return env.Queue, env.QueueErr
}

// CheckOutput is the result of a consistency check.
type CheckOutput struct {
	Path     string          `json:"path"`
	OK       bool            `json:"ok" jsonschema:"the local store and, when there is one, the queue's database are sound"`
	Problems []string        `json:"problems" jsonschema:"the local store's"`
	Queue    *pgstore.Report `json:"queue,omitempty" jsonschema:"the queue's database, when the queue is not in the local store"`
}

// ExitCode is 8 (checks failed) when the store is not sound.
func (c CheckOutput) ExitCode() int {
	if c.OK {
		return 0
	}
	return op.KindChecksFailed.ExitCode()
}

func check(ctx context.Context, env *op.Env, _ struct{}) (CheckOutput, error) {
	database, err := queueDatabase(env)
	if err != nil {
		return CheckOutput{}, err
	}
	problems, err := env.Store.Check(ctx)
	if err != nil {
		return CheckOutput{}, err
	}
	out := CheckOutput{Path: env.Store.Path, OK: len(problems) == 0, Problems: append([]string{}, problems...)}
	if database == "" {
		return out, nil
	}
	report, err := pgstore.Check(ctx, database)
	if err != nil {
		return CheckOutput{}, err
	}
	out.Queue, out.OK = &report, out.OK && report.OK
	return out, nil
}

// BackupInput names the copy to write.
type BackupInput struct {
	File      string `json:"file" jsonschema:"where to write the copy of the local store"`
	QueueFile string `json:"queue_file,omitempty" jsonschema:"where to write the export of the queue's database, when the queue is in one (default: FILE.queue.sql)"`
	Force     bool   `json:"force,omitempty" jsonschema:"replace the files if they exist"`
}

// BackupOutput describes the copy.
type BackupOutput struct {
	File  string          `json:"file"`
	Bytes int64           `json:"bytes"`
	Queue *pgstore.Export `json:"queue,omitempty" jsonschema:"the export of the queue's database, when the queue is in one"`
}

func backup(ctx context.Context, env *op.Env, in BackupInput) (BackupOutput, error) {
	database, err := queueDatabase(env)
	if err != nil {
		return BackupOutput{}, err
	}
	dest, err := destination(env, "backup", in.File)
	if err != nil {
		return BackupOutput{}, err
	}
	var out BackupOutput
	switch {
	case database == "" && in.QueueFile != "":
		return BackupOutput{}, op.Errorf(op.KindInvalid, "--queue-file is for a queue in a database; this queue is in the local store, which %s holds", dest).
			WithHint("leave --queue-file out, or name the database with --store postgres://… or LM_STORE")
	case database != "":
		export, err := destination(env, "backup", cmp.Or(in.QueueFile, in.File+".queue.sql"))
		if err != nil {
			return BackupOutput{}, err
		}
		if same(export, dest) {
			return BackupOutput{}, op.Errorf(op.KindInvalid, "backup: the local store's copy and the queue's export would both be %s", dest)
		}
		// The database first: it is what may be unreachable, and then
		// nothing is written.
		queue, err := pgstore.Backup(ctx, database, export, in.Force)
		if err != nil {
			return BackupOutput{}, writeError("export the queue to", export, err)
		}
		out.Queue = &queue
	}
	n, err := env.Store.Backup(ctx, dest, in.Force)
	if err != nil {
		if out.Queue != nil {
			// Half a backup is none: the export goes too, so that the
			// same command can be run again once its cause is mended.
			os.Remove(out.Queue.File)
		}
		return BackupOutput{}, writeError("backup to", dest, err)
	}
	out.File, out.Bytes = dest, n
	return out, nil
}

func compact(ctx context.Context, env *op.Env, _ struct{}) (store.CompactReport, error) {
	return env.Store.Compact(ctx)
}

// destination resolves where a copy of the store goes; never onto the store.
func destination(env *op.Env, verb, file string) (string, error) {
	if err := env.Store.Err(); err != nil {
		return "", err
	}
	dest, err := filepath.Abs(file)
	if err != nil {
		return "", op.Errorf(op.KindInvalid, "%s destination %q: %w", verb, file, err)
	}
	if same(dest, env.Store.Path) {
		return "", op.Errorf(op.KindInvalid, "%s destination %s is the store itself", verb, dest)
	}
	return dest, nil
}

// writeError classifies a failure to write a copy of the store.
func writeError(verb, dest string, err error) error {
	var exists *store.ExistsError
	if errors.As(err, &exists) {
		return op.Errorf(op.KindConflict, "%s %s: the file exists", verb, dest).WithHint("pass --force to replace it, or choose another name")
	}
	if op.KindOf(err) != op.KindInternal {
		return err // the store's own errors carry their kind and advice
	}
	return op.Errorf(op.KindInternal, "%s %s: %w", verb, dest, err)
}

// SalvageInput names the fresh store to write.
type SalvageInput struct {
	File  string `json:"file" jsonschema:"where to write the fresh store"`
	Force bool   `json:"force,omitempty" jsonschema:"replace the file if it exists"`
}

// SalvageOutput is the fresh store and what did not make it there.
type SalvageOutput struct {
	File string `json:"file"`
	store.SalvageReport
}

func salvage(ctx context.Context, env *op.Env, in SalvageInput) (SalvageOutput, error) {
	dest, err := destination(env, "salvage", in.File)
	if err != nil {
		return SalvageOutput{}, err
	}
	report, err := env.Store.Salvage(ctx, dest, in.Force)
	if err != nil {
		return SalvageOutput{}, writeError("salvage to", dest, err)
	}
	return SalvageOutput{File: dest, SalvageReport: report}, nil
}

// RestoreInput names the store file to put in place.
type RestoreInput struct {
	File string `json:"file" jsonschema:"a sound store file: a backup, or the result of lm store salvage"`
}

// RestoreOutput says where the replaced store was kept.
type RestoreOutput struct {
	Path     string `json:"path" jsonschema:"the store, now a copy of file"`
	Replaced string `json:"replaced,omitempty" jsonschema:"where the store it replaced was kept"`
}

func restore(ctx context.Context, env *op.Env, in RestoreInput) (RestoreOutput, error) {
	if err := env.Store.Err(); err != nil {
		return RestoreOutput{}, err
	}
	from, err := filepath.Abs(in.File)
	if err != nil {
		return RestoreOutput{}, op.Errorf(op.KindInvalid, "restore from %q: %w", in.File, err)
	}
	if _, err := os.Stat(from); err != nil {
		return RestoreOutput{}, op.Errorf(op.KindNotFound, "restore from %s: %w", from, err)
	}
	kept, err := env.Store.Restore(ctx, from)
	var corrupt *store.CorruptError
	if errors.As(err, &corrupt) {
		return RestoreOutput{}, op.Errorf(op.KindChecksFailed, "%s is not a sound store, so it was not restored: %w", from, err).
			WithHint("restore another backup, or salvage this one first with lm --store %s store salvage FILE", from)
	}
	if err != nil {
		return RestoreOutput{}, err
	}
	return RestoreOutput{Path: env.Store.Path, Replaced: kept}, nil
}

func same(a, b string) bool {
	if a == b {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// Ops are the `lm store` operations. They are for people and scripts, so
// they stay off MCP: an agent has no business copying the store around.
func Ops() []op.Operation {
	return []op.Operation{
		op.New(op.Meta{Name: "store_path", Path: []string{"store", "path"}, Callers: op.PersonOnly, Summary: "Print where the store file is",
			Effect: op.ReadOnly, Idempotent: true, CLIOnly: true}, storePath),
		op.New(op.Meta{Name: "store_info", Path: []string{"store", "info"}, Callers: op.PersonOnly, Summary: "Show the store's size, schema version and bucket sizes, and where the queue's database is, with its schema and counts",
			Effect: op.ReadOnly, Idempotent: true, CLIOnly: true}, info),
		op.New(op.Meta{Name: "store_check", Path: []string{"store", "check"}, Callers: op.PersonOnly, Summary: "Check the store's consistency, and the queue database's when there is one (exit 8 when either is not sound)",
			Effect: op.ReadOnly, Idempotent: true, CLIOnly: true}, check),
		op.New(op.Meta{Name: "store_backup", Path: []string{"store", "backup"}, Callers: op.PersonOnly, Summary: "Write a consistent copy of a sound store while others keep using it, and an export of the queue's database when there is one",
			Description: "With the queue in a database, the export is a SQL script (FILE.queue.sql, or --queue-file) of the queue's tables in one snapshot, " +
				"which psql restores into a database lm store migrate prepared. lm reads the tables itself: the URL and its password reach no other program.",
			Examples: "lm store backup ~/lm-backup.db\nPGPASSWORD=… LM_STORE=postgres://lm@db/lm lm store backup ~/lm.db   # also ~/lm.db.queue.sql\n" +
				"psql -v ON_ERROR_STOP=1 --single-transaction -f ~/lm.db.queue.sql postgres://lm@db2/lm   # after lm store migrate there",
			Args: []string{"file"}, Effect: op.Mutating, CLIOnly: true}, backup),
		op.New(op.Meta{Name: "store_compact", Path: []string{"store", "compact"}, Callers: op.PersonOnly, Summary: "Rewrite the store without its free pages, holding its lock so others wait rather than lose anything",
			Description: "bbolt keeps the pages a prune freed, so a store keeps its size and every commit writes the list of free pages; compact gives them back. 'lm store info' says about how much it would free.",
			Effect:      op.Mutating, CLIOnly: true}, compact),
		op.New(op.Meta{Name: "store_salvage", Path: []string{"store", "salvage"}, Callers: op.PersonOnly, Summary: "Copy every readable record of a damaged store into a fresh store file, listing what was dropped",
			Args: []string{"file"}, Effect: op.Mutating, CLIOnly: true}, salvage),
		op.New(op.Meta{Name: "store_restore", Path: []string{"store", "restore"}, Callers: op.PersonOnly, Summary: "Replace the store with a sound store file (a backup or a salvage), keeping the old one beside it",
			Args: []string{"file"}, Effect: op.Destructive, CLIOnly: true}, restore),
	}
}

// Table is the local store's table with the queue's database in its
// summary.
func (i InfoOutput) Table() table.Table {
	t := i.Info.Table()
	if q := i.Queue; q != nil {
		t.Summary = append(t.Summary,
			table.Field{Name: "queue", Value: q.Where},
			table.Field{Name: "queue server", Value: "PostgreSQL " + q.Server},
			table.Field{Name: "queue schema", Value: q.SchemaVersion},
			table.Field{Name: "pending", Value: q.Pending},
			table.Field{Name: "consumed", Value: q.Consumed},
			table.Field{Name: "agents", Value: q.Agents},
			table.Field{Name: "events kept", Value: q.EventsKept},
			table.Field{Name: "queue size", Value: table.Bytes(q.SizeBytes)})
	}
	return t
}
