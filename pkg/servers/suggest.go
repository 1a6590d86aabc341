package servers

import (
	"context"

	"lmtool.dev/lm/pkg/op"
)

// configuredNames are the servers of servers.json, for shell completion.
func configuredNames(env *op.Env, field string) []string {
	if field != "name" {
		return nil
	}
	cfg, err := Load(env.Home)
	if err != nil {
		return nil
	}
	return cfg.Names()
}

// Suggest offers configured server names.
func (NameInput) Suggest(_ context.Context, env *op.Env, field string) []string {
	return configuredNames(env, field)
}

// Suggest offers configured server names.
func (StatusInput) Suggest(_ context.Context, env *op.Env, field string) []string {
	return configuredNames(env, field)
}

// Suggest offers configured server names.
func (LogsInput) Suggest(_ context.Context, env *op.Env, field string) []string {
	return configuredNames(env, field)
}
