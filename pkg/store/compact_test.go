package store

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Compacting under a concurrent writer loses nothing: the writer waits on
// the lock, every write it was told succeeded is in the compacted store,
// and the file gives back what the deleted records freed.
func TestCompactUnderAWriterLosesNothing(t *testing.T) {
	defer noAutoCompaction()()
	s := newStore(t)
	ctx := context.Background()
	bucket := []byte("things")
	put := func(from, to int) {
		if err := s.Update(ctx, func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(bucket)
			if err != nil {
				return err
			}
			for i := from; i < to; i++ {
				if err := b.Put(fmt.Appendf(nil, "k%06d", i), make([]byte, 512)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	put(0, 40000)
	if err := s.Update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		for i := 0; i < 39000; i++ {
			if err := b.Delete(fmt.Appendf(nil, "k%06d", i)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	info, err := s.Stat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Reclaimable < info.SizeBytes/2 {
		t.Fatalf("after deleting most records, info says %d of %d bytes are reclaimable", info.Reclaimable, info.SizeBytes)
	}

	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 200 {
			put(100000+i, 100000+i+1)
		}
	})
	report, err := s.Compact(ctx)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if report.BytesAfter > report.BytesBefore/4 {
		t.Errorf("compaction: %d → %d bytes", report.BytesBefore, report.BytesAfter)
	}
	if problems, err := s.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check after compaction: %v %v", problems, err)
	}
	if err := s.View(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		for i := 39000; i < 40000; i++ {
			if b.Get(fmt.Appendf(nil, "k%06d", i)) == nil {
				return fmt.Errorf("record k%06d lost", i)
			}
		}
		for i := range 200 {
			if b.Get(fmt.Appendf(nil, "k%06d", 100000+i)) == nil {
				return fmt.Errorf("concurrent write k%06d lost", 100000+i)
			}
		}
		if n := b.Stats().KeyN; n != 1200 {
			return fmt.Errorf("%d records, want 1200", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(s.Path); fi.Mode().Perm() != 0o600 {
		t.Errorf("compacted store mode %v", fi.Mode().Perm())
	}
}

// noAutoCompaction stops stores compacting themselves after a commit.
func noAutoCompaction() (restore func()) {
	old := compactLivePages
	compactLivePages = -1
	return func() { compactLivePages = old }
}

// A commit that leaves the store mostly free pages compacts it, so later
// commits do not write a list of thousands of free pages; one that frees
// less than the store holds leaves the file alone.
func TestStoreCompactsItselfWhenMostlyFree(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	bucket := []byte("things")
	write := func(fn func(b *bolt.Bucket) error) {
		t.Helper()
		if err := s.Update(ctx, func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(bucket)
			if err != nil {
				return err
			}
			return fn(b)
		}); err != nil {
			t.Fatal(err)
		}
	}
	size := func() int64 {
		fi, err := os.Stat(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	deleteRange := func(from, to int) {
		write(func(b *bolt.Bucket) error {
			for i := from; i < to; i++ {
				if err := b.Delete(fmt.Appendf(nil, "k%06d", i)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	write(func(b *bolt.Bucket) error {
		for i := range 40000 {
			if err := b.Put(fmt.Appendf(nil, "k%06d", i), make([]byte, 512)); err != nil {
				return err
			}
		}
		return nil
	})
	full := size()

	deleteRange(0, 15000) // fewer free pages than used ones
	if got := size(); got != full {
		t.Fatalf("freeing less than the store holds changed the file: %d → %d bytes", full, got)
	}
	deleteRange(15000, 39000)
	if got := size(); got > full/4 {
		t.Fatalf("a store of mostly free pages stayed %d bytes (was %d)", got, full)
	}
	if problems, err := s.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check after the compaction: %v %v", problems, err)
	}
	if err := s.View(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		if n := b.Stats().KeyN; n != 1000 {
			return fmt.Errorf("%d records, want 1000", n)
		}
		for i := 39000; i < 40000; i++ {
			if b.Get(fmt.Appendf(nil, "k%06d", i)) == nil {
				return fmt.Errorf("record k%06d lost", i)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
