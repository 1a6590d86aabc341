package client

import (
	"context"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"
	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/store"
)

var (
	historyBucket   = store.JSON[Record]("agent.history", store.AnyKey, nil)
	favouriteBucket = store.JSON[Favourite]("agent.favourites", store.AnyKey, nil)
)

// Approval says who let a call run: "approved" when a person ran it from
// the command line or approved it on the gateway's page, "auto" when an
// agent or a program did.
const (
	Approved = "approved"
	Auto     = "auto"
)

// Outcomes of a recorded call.
const (
	OutcomeOK        = "ok"
	OutcomeToolError = op.CategoryToolError
	OutcomeFailed    = "failed"
	// OutcomeCancelled is a call its caller stopped waiting for: the
	// server was told to cancel, but may have acted already.
	OutcomeCancelled = "cancelled"
)

// summaryLimit bounds the result text kept in history.
const summaryLimit = 300

// historyLimit bounds the history: past it, the oldest calls go as new
// ones are recorded. Each record is well under 2 KB, so the history costs
// at most some 20 MB of the store however long lm is used.
var historyLimit = 10_000

// Record is one executed call in the history.
type Record struct {
	ID         string         `json:"id"`
	Time       time.Time      `json:"time"`
	Target     Target         `json:"target"`
	Tool       string         `json:"tool"`
	Arguments  map[string]any `json:"arguments"`
	Approval   string         `json:"approval" jsonschema:"approved (a person ran it) or auto"`
	DurationMS int64          `json:"duration_ms"`
	Outcome    string         `json:"outcome" jsonschema:"ok, tool_error, failed, or cancelled (the caller stopped waiting; the server may have acted)"`
	Summary    string         `json:"summary,omitempty" jsonschema:"the start of the result's text, or the error"`
}

// record stores an executed call; the target is stored without its token.
func record(ctx context.Context, env *op.Env, r Record) (Record, error) {
	r.ID = "h_" + ulid.Make().String()
	r.Target = r.Target.withoutSecrets()
	if r.Arguments == nil {
		r.Arguments = map[string]any{}
	}
	if len(r.Summary) > summaryLimit {
		r.Summary = r.Summary[:summaryLimit] + "…"
	}
	err := env.Store.Update(ctx, func(tx *bolt.Tx) error {
		if err := historyBucket.Put(tx, []byte(r.ID), r); err != nil {
			return err
		}
		return trimHistory(tx)
	})
	return r, err
}

// trimHistory deletes the oldest calls past historyLimit. Ids are ULIDs, so
// key order is time order: the newest historyLimit are the last keys.
func trimHistory(tx *bolt.Tx) error {
	b := historyBucket.Of(tx)
	if b == nil {
		return nil
	}
	c := b.Cursor()
	k, _ := store.Last(c)
	for range historyLimit {
		if k == nil {
			return nil
		}
		k, _ = c.Prev()
	}
	// k is the newest call past the limit: it and all before it go,
	// gathered first, since deleting under a cursor may move it.
	var old [][]byte
	for ; k != nil; k, _ = c.Prev() {
		old = append(old, slices.Clone(k))
	}
	for _, k := range old {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// history returns the recorded calls, oldest first; a filter may drop some.
func history(ctx context.Context, env *op.Env, keep func(Record) bool) ([]Record, error) {
	out := []Record{}
	err := env.Store.View(ctx, func(tx *bolt.Tx) error {
		return historyBucket.ForEach(tx, func(_ []byte, r Record) error {
			if keep(r) {
				out = append(out, r)
			}
			return nil
		})
	})
	return out, err
}

func historyRecord(ctx context.Context, env *op.Env, id string) (Record, error) {
	var r Record
	found := false
	err := env.Store.View(ctx, func(tx *bolt.Tx) (err error) {
		r, found, err = historyBucket.Get(tx, []byte(id))
		return err
	})
	if err == nil && !found {
		err = op.Errorf(op.KindNotFound, "no call %q in the history", id).WithHint("lm servers history lists the calls")
	}
	return r, err
}

// Favourite is a named call kept for reuse.
type Favourite struct {
	Name      string         `json:"name"`
	Target    Target         `json:"target"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	Created   time.Time      `json:"created"`
}

func putFavourite(ctx context.Context, env *op.Env, f Favourite) error {
	return env.Store.Update(ctx, func(tx *bolt.Tx) error {
		if b := favouriteBucket.Of(tx); b != nil && b.Get([]byte(f.Name)) != nil {
			return op.Errorf(op.KindConflict, "a favourite named %q exists", f.Name).WithHint("remove it first with lm servers fav rm %s", f.Name)
		}
		return favouriteBucket.Put(tx, []byte(f.Name), f)
	})
}

func favourites(ctx context.Context, env *op.Env) ([]Favourite, error) {
	out := []Favourite{}
	err := env.Store.View(ctx, func(tx *bolt.Tx) error {
		return favouriteBucket.ForEach(tx, func(_ []byte, f Favourite) error {
			out = append(out, f)
			return nil
		})
	})
	return out, err
}

func favourite(ctx context.Context, env *op.Env, name string) (Favourite, error) {
	var f Favourite
	found := false
	err := env.Store.View(ctx, func(tx *bolt.Tx) (err error) {
		f, found, err = favouriteBucket.Get(tx, []byte(name))
		return err
	})
	if err == nil && !found {
		err = op.Errorf(op.KindNotFound, "no favourite named %q", name).WithHint("lm servers fav list shows them")
	}
	return f, err
}

func removeFavourite(ctx context.Context, env *op.Env, name string) error {
	return env.Store.Update(ctx, func(tx *bolt.Tx) error {
		b := favouriteBucket.Of(tx)
		if b == nil || b.Get([]byte(name)) == nil {
			return op.Errorf(op.KindNotFound, "no favourite named %q", name).WithHint("lm servers fav list shows them")
		}
		return b.Delete([]byte(name))
	})
}
