// Package admin holds the store's maintenance operations (`lm store …`):
// where it is, what is in it, whether it is sound, and a consistent copy.
package admin

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/store"
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

func info(ctx context.Context, env *op.Env, _ struct{}) (store.Info, error) {
	return env.Store.Stat(ctx)
}

// CheckOutput is the result of a consistency check.
type CheckOutput struct {
	Path     string   `json:"path"`
	OK       bool     `json:"ok"`
	Problems []string `json:"problems"`
}

// ExitCode is 8 (checks failed) when the store is not sound.
func (c CheckOutput) ExitCode() int {
	if c.OK {
		return 0
	}
	return op.KindChecksFailed.ExitCode()
}

func check(ctx context.Context, env *op.Env, _ struct{}) (CheckOutput, error) {
	problems, err := env.Store.Check(ctx)
	if err != nil {
		return CheckOutput{}, err
	}
	return CheckOutput{Path: env.Store.Path, OK: len(problems) == 0, Problems: append([]string{}, problems...)}, nil
}

// BackupInput names the copy to write.
type BackupInput struct {
	File  string `json:"file" jsonschema:"where to write the copy"`
	Force bool   `json:"force,omitempty" jsonschema:"replace the file if it exists"`
}

// BackupOutput describes the copy.
type BackupOutput struct {
	File  string `json:"file"`
	Bytes int64  `json:"bytes"`
}

func backup(ctx context.Context, env *op.Env, in BackupInput) (BackupOutput, error) {
	dest, err := destination(env, "backup", in.File)
	if err != nil {
		return BackupOutput{}, err
	}
	n, err := env.Store.Backup(ctx, dest, in.Force)
	if err != nil {
		return BackupOutput{}, writeError("backup to", dest, err)
	}
	return BackupOutput{File: dest, Bytes: n}, nil
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
		op.New(op.Meta{Name: "store_info", Path: []string{"store", "info"}, Callers: op.PersonOnly, Summary: "Show the store's size, schema version and bucket sizes",
			Effect: op.ReadOnly, Idempotent: true, CLIOnly: true}, info),
		op.New(op.Meta{Name: "store_check", Path: []string{"store", "check"}, Callers: op.PersonOnly, Summary: "Check the store's consistency (exit 8 when it is not sound)",
			Effect: op.ReadOnly, Idempotent: true, CLIOnly: true}, check),
		op.New(op.Meta{Name: "store_backup", Path: []string{"store", "backup"}, Callers: op.PersonOnly, Summary: "Write a consistent copy of a sound store while others keep using it",
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
