package tasks

import (
	"context"

	"lmtool.dev/lm/pkg/op"
)

// Names are the current project's task names, for shell completion.
func Names(ctx context.Context, env *op.Env) []string {
	out, err := List(ctx, env, ListInput{})
	if err != nil {
		return nil
	}
	names := make([]string, len(out.Tasks))
	for i, t := range out.Tasks {
		names[i] = t.Name
	}
	return names
}

// Suggest offers task names.
func (ShowInput) Suggest(ctx context.Context, env *op.Env, field string) []string {
	if field != "name" {
		return nil
	}
	return Names(ctx, env)
}

// Suggest offers task names.
func (CommandInput) Suggest(ctx context.Context, env *op.Env, field string) []string {
	if field != "task" {
		return nil
	}
	return Names(ctx, env)
}

// Suggest offers task names.
func (RunInput) Suggest(ctx context.Context, env *op.Env, field string) []string {
	if field != "name" {
		return nil
	}
	return Names(ctx, env)
}
