package extract

import (
	"context"
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/op"
)

// bCache maps a content hash (with the task and its options) to a result.
var bCache = []byte("extract.cache")

// lookup fills in the jobs whose results are cached.
func lookup(ctx context.Context, env *op.Env, jobs []job) error {
	return env.Store.View(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bCache)
		if b == nil {
			return nil
		}
		for i := range jobs {
			j := &jobs[i]
			if j.done || j.key == "" {
				continue
			}
			if v := b.Get([]byte(j.key)); v != nil && json.Unmarshal(v, &j.result) == nil {
				j.result.Cached, j.done = true, true
			}
		}
		return nil
	})
}

// remember stores the results computed in this call.
func remember(ctx context.Context, env *op.Env, jobs []job) error {
	fresh := 0
	for _, j := range jobs {
		if j.key != "" && !j.result.Cached {
			fresh++
		}
	}
	if fresh == 0 {
		return nil
	}
	return env.Store.Update(ctx, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bCache)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if j.key == "" || j.result.Cached {
				continue
			}
			v, err := json.Marshal(j.result)
			if err != nil {
				return err
			}
			if err := b.Put([]byte(j.key), v); err != nil {
				return err
			}
		}
		return nil
	})
}
