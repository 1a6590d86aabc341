// Package admin holds the store's maintenance operations (`lm store …`):
// where it is, what is in it, whether it is sound, and a consistent copy.
package admin

import (
	"context"
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
	File string `json:"file" jsonschema:"where to write the copy; an existing file is replaced"`
}

// BackupOutput describes the copy.
type BackupOutput struct {
	File  string `json:"file"`
	Bytes int64  `json:"bytes"`
}

func backup(ctx context.Context, env *op.Env, in BackupInput) (BackupOutput, error) {
	dest, err := filepath.Abs(in.File)
	if err != nil {
		return BackupOutput{}, op.Errorf(op.KindInvalid, "backup destination %q: %w", in.File, err)
	}
	if same(dest, env.Store.Path) {
		return BackupOutput{}, op.Errorf(op.KindInvalid, "backup destination %s is the store itself", dest)
	}
	n, err := env.Store.Backup(ctx, dest)
	if err != nil {
		return BackupOutput{}, op.Errorf(op.KindInternal, "backup to %s: %w", dest, err)
	}
	return BackupOutput{File: dest, Bytes: n}, nil
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
		op.New(op.Meta{Name: "store_backup", Path: []string{"store", "backup"}, Callers: op.PersonOnly, Summary: "Write a consistent copy of the store while others keep using it",
			Args: []string{"file"}, Effect: op.Mutating, CLIOnly: true}, backup),
	}
}
