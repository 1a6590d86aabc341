package queue

import (
	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/store"
)

var _ = store.AfterSalvage(rebuildIndexes)

// rebuildIndexes makes a salvaged queue whole: the pending and consumed
// indexes and the counters are derived again from the instructions that
// survived, so no index entry names a dropped instruction and the counts
// match what is there.
func rebuildIndexes(btx *bolt.Tx) error {
	for _, name := range [][]byte{bPending, bConsumed} {
		if btx.Bucket(name) != nil {
			if err := btx.DeleteBucket(name); err != nil {
				return err
			}
		}
	}
	var pending, consumed []Record
	err := itemsBucket.ForEach(btx, func(_ []byte, r Record) error {
		if r.Status == StatusPending {
			pending = append(pending, r)
		} else {
			consumed = append(consumed, r)
		}
		return nil
	})
	if err != nil {
		return err
	}
	t := &boltTx{Tx: btx}
	taken := map[uint64]bool{}
	for _, r := range pending {
		if taken[r.Order] { // two survivors claim one place: the later one follows
			for taken[r.Order] {
				r.Order++
			}
			if err := t.put(r); err != nil {
				return err
			}
		}
		taken[r.Order] = true
		if err := pendingBucket.Put(btx, u64(r.Order), r.ID); err != nil {
			return err
		}
	}
	for _, r := range consumed {
		if err := consumedBucket.Put(btx, consumedKey(r), r.ID); err != nil {
			return err
		}
	}
	if err := metaBucket.Put(btx, kPending, meta{raw: u64(uint64(len(pending)))}); err != nil {
		return err
	}
	return metaBucket.Put(btx, kConsumed, meta{raw: u64(uint64(len(consumed)))})
}
