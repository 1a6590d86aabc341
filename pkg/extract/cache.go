package extract

import (
	"context"
	"encoding/binary"
	"encoding/json"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/store"
)

// bCache maps a content hash (with the task and its options) to a result;
// bCacheOrder maps an insertion sequence number to a bCache key, so the
// oldest entries can be evicted first.
var (
	cacheBucket      = store.JSON[FileResult]("extract.cache", store.AnyKey, nil)
	cacheOrderBucket = store.Text("extract.cache_order", store.Uint64Key)
	bCache           = cacheBucket.Name()
	bCacheOrder      = cacheOrderBucket.Name()
)

// cacheLimit bounds the cache: past it, the oldest entries go. Results are
// small (a frontmatter block, a file's symbols), so this is tens of MB at
// most, and a 50,000-file tree still fits.
var cacheLimit uint64 = 50_000

// lookup fills in the jobs whose results are cached.
func lookup(ctx context.Context, env *op.Env, jobs []job) error {
	return env.Store.View(ctx, func(tx *bolt.Tx) error {
		if cacheBucket.Of(tx) == nil {
			return nil
		}
		for i := range jobs {
			j := &jobs[i]
			if j.done || j.key == "" {
				continue
			}
			r, ok, err := cacheBucket.Get(tx, []byte(j.key))
			if err != nil {
				return err
			}
			if ok {
				j.result = r
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
		if tx.Bucket(bCacheOrder) == nil && tx.Bucket(bCache) != nil {
			// a cache written before eviction existed: start it afresh
			if err := tx.DeleteBucket(bCache); err != nil {
				return err
			}
		}
		b, err := tx.CreateBucketIfNotExists(bCache)
		if err != nil {
			return err
		}
		order, err := tx.CreateBucketIfNotExists(bCacheOrder)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if j.key == "" || j.result.Cached || b.Get([]byte(j.key)) != nil { // another process stored it meanwhile
				continue
			}
			v, err := json.Marshal(j.result)
			if err != nil {
				return err
			}
			seq, err := order.NextSequence()
			if err != nil {
				return err
			}
			if err := b.Put([]byte(j.key), v); err != nil {
				return err
			}
			if err := order.Put(binary.BigEndian.AppendUint64(nil, seq), []byte(j.key)); err != nil {
				return err
			}
		}
		return evict(b, order)
	})
}

// evict deletes the oldest entries past cacheLimit. Entries are only ever
// removed from the front of the order, so the live ones are exactly the
// sequence numbers from the first to the last issued.
func evict(b, order *bolt.Bucket) error {
	c := order.Cursor()
	for k, key := c.First(); k != nil; k, key = c.First() {
		if _, err := cacheOrderBucket.Decode(k, key); err != nil {
			return err
		}
		if order.Sequence()-binary.BigEndian.Uint64(k)+1 <= cacheLimit {
			return nil
		}
		if err := b.Delete(key); err != nil {
			return err
		}
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}
