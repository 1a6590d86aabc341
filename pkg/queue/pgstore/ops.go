package pgstore

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/store"
)

// Ops are the database's maintenance operations.
func Ops() []op.Operation {
	return []op.Operation{
		op.New(op.Meta{
			Name: "store_migrate", Path: []string{"store", "migrate"},
			Callers: op.PersonOnly,
			Summary: "Bring the queue's database to this lm's schema",
			Description: "With --store postgres://… (or LM_STORE), creates or upgrades the queue's tables in one transaction; " +
				"gateways and CLIs refuse a database whose schema is older or newer than theirs. " +
				"The local bbolt store migrates itself on first write; for it this makes sure it is current and reports its path.",
			Examples: "PGPASSWORD=… lm store migrate --store postgres://lm@db.example.com/lm?sslmode=verify-full",
			Effect:   op.Mutating, Idempotent: true,
		}, migrate),
	}
}

func migrate(ctx context.Context, env *op.Env, _ struct{}) (MigrateOutput, error) {
	if env.Queue == "" {
		// The local store migrates in the first write transaction that
		// opens it; an empty one is enough.
		if err := env.Store.Update(ctx, func(*bolt.Tx) error { return nil }); err != nil {
			return MigrateOutput{}, err
		}
		return MigrateOutput{Backend: "bbolt", Where: env.Store.Path, From: store.SchemaVersion, To: store.SchemaVersion}, nil
	}
	return Migrate(ctx, env.Queue)
}
