package pgstore

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/queue"
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
		op.New(op.Meta{
			Name: "store_queue", Path: []string{"store", "queue"},
			Callers: op.PersonOnly,
			Summary: "Show where the queue lives: the local store or a database, its schema and counts",
			Description: "With --store postgres://… (or LM_STORE, or [store] url in config.toml), the database's URL with the password masked, " +
				"its schema version and identity; otherwise the local store's path.",
			Effect: op.ReadOnly, Idempotent: true,
		}, where),
	}
}

// WhereOutput says where the queue lives.
type WhereOutput struct {
	Backend  string `json:"backend" jsonschema:"bbolt (the local file) or postgres"`
	Where    string `json:"where" jsonschema:"the file, or the database URL with its password masked"`
	Schema   int    `json:"schema_version"`
	Identity string `json:"identity,omitempty" jsonschema:"names the queue; event ids continue only within one"`
	Pending  int    `json:"pending_count"`
	Consumed int    `json:"consumed_count"`
}

func where(ctx context.Context, env *op.Env, _ struct{}) (WhereOutput, error) {
	st, err := queue.Status(ctx, env, queue.Empty{})
	if err != nil {
		return WhereOutput{}, err
	}
	out := WhereOutput{Pending: st.Queue.PendingCount, Consumed: st.Queue.ConsumedCount, Identity: st.StoreID}
	if env.Queue == "" {
		out.Backend, out.Where, out.Schema = "bbolt", env.Store.Path, store.SchemaVersion
		return out, nil
	}
	out.Backend, out.Where, out.Schema = "postgres", Redact(env.Queue), SchemaVersion
	return out, nil
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
