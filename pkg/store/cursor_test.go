package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A bucket of several pages emptied in the transaction that then asks for
// its last key: bbolt's own Cursor.Last spins there for good; Last answers.
func TestLastOfABucketEmptiedInTheSameTransaction(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "lm.db"), time.Minute)
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("t"))
		if err != nil {
			return err
		}
		for i := range 2000 {
			if err := b.Put(fmt.Appendf(nil, "%08d", i), []byte("an instruction's id")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	done := make(chan []byte, 1)
	go func() {
		s.Update(ctx, func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("t"))
			for i := range 2000 {
				if err := b.Delete(fmt.Appendf(nil, "%08d", i)); err != nil {
					return err
				}
			}
			k, _ := Last(b.Cursor())
			done <- k
			return nil
		})
	}()
	select {
	case k := <-done:
		if k != nil {
			t.Errorf("last key of an emptied bucket: %q, want none", k)
		}
	case <-time.After(time.Minute):
		t.Fatal("Last did not return on a bucket emptied in its transaction")
	}
}
