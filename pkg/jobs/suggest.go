package jobs

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/tasks"
)

// jobIDs are the ids shell completion offers, newest first.
func jobIDs(ctx context.Context, env *op.Env, field string) []string {
	if field != "id" && field != "job_id" {
		return nil
	}
	var ids []string
	env.Store.View(ctx, func(tx *bolt.Tx) error {
		jobs, err := all(tx)
		for _, j := range jobs {
			ids = append([]string{j.ID}, ids...)
		}
		return err
	})
	return ids
}

// Suggest offers job ids.
func (IDInput) Suggest(ctx context.Context, env *op.Env, field string) []string {
	return jobIDs(ctx, env, field)
}

// Suggest offers job ids.
func (LogsInput) Suggest(ctx context.Context, env *op.Env, field string) []string {
	return jobIDs(ctx, env, field)
}

// Suggest offers job ids.
func (WaitInput) Suggest(ctx context.Context, env *op.Env, field string) []string {
	return jobIDs(ctx, env, field)
}

// Suggest offers job ids.
func (StopInput) Suggest(ctx context.Context, env *op.Env, field string) []string {
	return jobIDs(ctx, env, field)
}

// Suggest offers the project's task names for the first word.
func (StartInput) Suggest(ctx context.Context, env *op.Env, field string) []string {
	if field != "command" && field != "task" {
		return nil
	}
	return tasks.Names(ctx, env)
}
