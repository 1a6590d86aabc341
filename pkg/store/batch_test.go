package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// queued waits until a write is being committed and n more wait in the
// store's commit queue.
func queued(t *testing.T, s *Store, n int) {
	t.Helper()
	g := s.group()
	for i := 0; ; i++ {
		g.mu.Lock()
		got, leading := len(g.queue), g.leading
		g.mu.Unlock()
		if leading && got == n {
			return
		}
		if i == 1000 {
			t.Fatalf("%d writes queued, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func txID(t *testing.T, s *Store) int {
	t.Helper()
	var id int
	if err := s.View(context.Background(), func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

// Writes that queue while the store is busy share one commit, yet each one's
// outcome is what it would be alone: a write that fails or panics leaves
// nothing, and every other write counts exactly once, although the shared
// transaction ran again without the failed ones.
func TestBatchSharesCommitsAndKeepsEachWritesOutcome(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "lm.db"), time.Minute)
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("t")); return err }); err != nil {
		t.Fatal(err)
	}
	before := txID(t, s)

	// Another process holds the store: the first write waits for the
	// lock, and the rest queue behind it.
	held, err := acquire(ctx, s.LockPath(), true, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const writers = 40
	errs := make([]error, writers)
	var wg sync.WaitGroup
	write := func(i int) {
		defer wg.Done()
		errs[i] = s.Batch(ctx, func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("t"))
			n := 0
			if v := b.Get([]byte("count")); v != nil {
				n = int(binary.BigEndian.Uint64(v))
			}
			if err := b.Put([]byte("count"), binary.BigEndian.AppendUint64(nil, uint64(n+1))); err != nil {
				return err
			}
			if err := b.Put(fmt.Appendf(nil, "w%02d", i), []byte{1}); err != nil {
				return err
			}
			switch i % 10 {
			case 3:
				return fmt.Errorf("write %d refused", i)
			case 7:
				var m map[string]int
				m["a bug"]++ // a runtime error: not damage
			}
			return nil
		})
	}
	wg.Add(1)
	go write(0)
	queued(t, s, 0)
	for i := 1; i < writers; i++ {
		wg.Add(1)
		go write(i)
	}
	queued(t, s, writers-1)
	held.release()
	wg.Wait()

	ok := 0
	for i, err := range errs {
		switch i % 10 {
		case 3:
			if err == nil || err.Error() != fmt.Sprintf("write %d refused", i) {
				t.Errorf("write %d: %v, want its own error", i, err)
			}
		case 7:
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Errorf("write %d panicked, yet returned %v", i, err)
			}
		default:
			if err != nil {
				t.Errorf("write %d: %v", i, err)
			}
			ok++
		}
	}
	if err := s.View(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("t"))
		if n := binary.BigEndian.Uint64(b.Get([]byte("count"))); n != uint64(ok) {
			t.Errorf("count %d after %d successful writes", n, ok)
		}
		for i := range writers {
			_, failed := map[int]bool{3: true, 7: true}[i%10]
			if got := b.Get(fmt.Appendf(nil, "w%02d", i)) != nil; got == failed {
				t.Errorf("write %d stored: %v", i, got)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The first write committed alone; the queue behind it in one commit.
	if commits := txID(t, s) - before; commits != 2 {
		t.Errorf("%d writes made %d commits, want 2", ok, commits)
	}
	if _, err := os.Stat(s.damagePath()); err == nil {
		t.Error("a bug's panic marked the store damaged")
	}
}

// A write whose caller gave up before its turn runs no part of itself.
func TestBatchSkipsAWriteWhoseContextEnded(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "lm.db"), time.Minute)
	ctx := context.Background()
	held, err := acquire(ctx, s.LockPath(), true, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	var first, second error
	go func() { defer wg.Done(); first = s.Batch(ctx, putKey("first")) }()
	queued(t, s, 0)
	gone, cancel := context.WithCancel(ctx)
	go func() { defer wg.Done(); second = s.Batch(gone, putKey("second")) }()
	queued(t, s, 1)
	cancel()
	held.release()
	wg.Wait()
	if first != nil || !errors.Is(second, context.Canceled) {
		t.Fatalf("first %v, second %v", first, second)
	}
	if err := s.View(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("t"))
		if b.Get([]byte("first")) == nil || b.Get([]byte("second")) != nil {
			t.Error("the cancelled write was stored, or the other was not")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func putKey(k string) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("t"))
		if err != nil {
			return err
		}
		return b.Put([]byte(k), []byte{1})
	}
}

// Writes whose callers all gave up while they queued are answered before
// the shared transaction runs, so the live writes run once, not once more
// for every cancelled write queued before them.
func TestBatchAnswersCancelledWritesTogether(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "lm.db"), time.Minute)
	ctx := context.Background()
	held, err := acquire(ctx, s.LockPath(), true, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var leaderErr error
	wg.Add(1)
	go func() { defer wg.Done(); leaderErr = s.Batch(ctx, putKey("leader")) }()
	queued(t, s, 0)
	var runs atomic.Int32
	var liveErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		liveErr = s.Batch(ctx, func(tx *bolt.Tx) error { runs.Add(1); return putKey("live")(tx) })
	}()
	queued(t, s, 1)
	const cancelled = 50
	gone, cancel := context.WithCancel(ctx)
	errs := make([]error, cancelled)
	for i := range cancelled {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.Batch(gone, putKey(fmt.Sprint("gone", i))) }()
	}
	queued(t, s, 1+cancelled)
	cancel()
	held.release()
	wg.Wait()
	if leaderErr != nil || liveErr != nil {
		t.Fatalf("leader %v, live %v", leaderErr, liveErr)
	}
	for i, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled write %d: %v", i, err)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the live write ran %d times beside %d cancelled ones, want once", n, cancelled)
	}
}

// What AfterWrites registers runs last in each batch's transaction, sees
// what the batch wrote and commits with it; one that fails is left out
// without costing the writes theirs; and each hears how its transaction
// ended, ErrRolledBack when the writes it followed did not commit.
func TestAfterWritesRunLastAndHearHowTheirTransactionEnded(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "lm.db"), time.Minute)
	ctx := context.Background()
	bucket := []byte("t")
	if err := s.Update(ctx, func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		t.Fatal(err)
	}
	get := func(tx *bolt.Tx, key string) string { return string(tx.Bucket(bucket).Get([]byte(key))) }
	stored := func(key string) string {
		var v string
		if err := s.View(ctx, func(tx *bolt.Tx) error { v = get(tx, key); return nil }); err != nil {
			t.Fatal(err)
		}
		return v
	}
	var heardA, heardB []error
	s.AfterWrites(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).Put([]byte("a"), []byte("saw "+get(tx, "n")))
	}, func(err error) { heardA = append(heardA, err) })
	var failB func() error
	s.AfterWrites(func(tx *bolt.Tx) error {
		if failB != nil {
			return failB()
		}
		return tx.Bucket(bucket).Put([]byte("b"), []byte("saw "+get(tx, "n")))
	}, func(err error) { heardB = append(heardB, err) })
	put := func(ctx context.Context, n string) error {
		return s.Batch(ctx, func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put([]byte("n"), []byte(n)) })
	}

	before := txID(t, s)
	if err := put(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	if a, b := stored("a"), stored("b"); a != "saw 1" || b != "saw 1" {
		t.Errorf("after the first write: a %q, b %q; both should have seen it", a, b)
	}
	if commits := txID(t, s) - before; commits != 1 {
		t.Errorf("a write and what followed it made %d commits, want 1", commits)
	}

	refused := errors.New("b refused")
	failB = func() error { return refused }
	if err := put(ctx, "2"); err != nil {
		t.Fatalf("a failing follower cost the write: %v", err)
	}
	if n, a, b := stored("n"), stored("a"), stored("b"); n != "2" || a != "saw 2" || b != "saw 1" {
		t.Errorf("after b failed: n %q, a %q, b %q; want the write and a committed, b's left out", n, a, b)
	}

	// The only write's caller gives up while b runs: nothing commits.
	gone, cancel := context.WithCancel(ctx)
	failB = func() error { cancel(); return refused }
	if err := put(gone, "3"); !errors.Is(err, context.Canceled) {
		t.Errorf("a write whose caller left: %v", err)
	}
	if n, a := stored("n"), stored("a"); n != "2" || a != "saw 2" {
		t.Errorf("after the write left: n %q, a %q; want nothing of that batch", n, a)
	}

	wantA := []error{nil, nil, ErrRolledBack}
	wantB := []error{nil, refused, refused}
	for i := range 3 {
		if i >= len(heardA) || !errors.Is(heardA[i], wantA[i]) || i >= len(heardB) || !errors.Is(heardB[i], wantB[i]) {
			t.Fatalf("a heard %v, b heard %v; want %v and %v", heardA, heardB, wantA, wantB)
		}
	}
}

// SeenByTrailers is true only while the store's latest commit is one the
// trailers ran after or in: a commit without them, one an earlier version
// signals with a bare line break, or a batch whose trailer failed is news.
func TestSeenByTrailersTellsWhetherTheLatestCommitIsNews(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "lm.db"), time.Minute)
	ctx := context.Background()
	bucket := []byte("t")
	if err := s.Update(ctx, func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		t.Fatal(err)
	}
	var fail error
	s.AfterWrites(func(*bolt.Tx) error { return fail }, func(error) {})
	put := func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).Put([]byte("k"), fmt.Appendf(nil, "%d", time.Now().UnixNano()))
	}
	step := func(what string, do func() error, want bool) {
		t.Helper()
		if err := do(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := s.SeenByTrailers(); got != want {
			t.Errorf("after %s: seen %v, want %v", what, got, want)
		}
	}
	if s.SeenByTrailers() {
		t.Error("seen before the trailers ever ran")
	}
	step("a batch", func() error { return s.Batch(ctx, put) }, true)
	step("a batch that changed nothing", func() error { return s.Batch(ctx, func(*bolt.Tx) error { return nil }) }, true)
	step("a commit without the trailers", func() error { return s.Update(ctx, put) }, false)
	step("another batch", func() error { return s.Batch(ctx, put) }, true)
	step("an earlier version's commit", func() error {
		f, err := os.OpenFile(s.LockPath(), os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteAt([]byte{'\n'}, 0)
		return err
	}, false)
	fail = errors.New("refused")
	step("a batch whose trailer failed", func() error { return s.Batch(ctx, put) }, false)
}

// An earlier version signals each commit with the same bare line break, so
// its second commit in a row leaves the lock file as its first did: once
// the trailers have looked after the first (a batch that changed nothing,
// which writes no mark), the second must still be news.
func TestSeenByTrailersTellsEachOfAnEarlierVersionsCommits(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "lm.db"), time.Minute)
	ctx := context.Background()
	s.AfterWrites(func(*bolt.Tx) error { return nil }, func(error) {})
	if err := s.Batch(ctx, func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("t")); return err }); err != nil {
		t.Fatal(err)
	}
	earlier := func() {
		t.Helper()
		f, err := os.OpenFile(s.LockPath(), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt([]byte{'\n'}, 0); err != nil {
			t.Fatal(err)
		}
	}
	earlier()
	if s.SeenByTrailers() {
		t.Error("an earlier version's commit was seen before the trailers ran")
	}
	if err := s.Batch(ctx, func(*bolt.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	earlier()
	if s.SeenByTrailers() {
		t.Error("an earlier version's second commit was taken for its first, seen already")
	}
}

// A watcher woken by a batch's commit finds that commit seen by the
// trailers that ran in it: were the mark written before it was recorded
// seen, the queue's claimer, woken by the add that delivered to a waiting
// call, would take it for news and look again for nothing.
func TestSeenByTrailersAsSoonAsTheCommitSignals(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "lm.db"), time.Minute)
	ctx := context.Background()
	s.AfterWrites(func(*bolt.Tx) error { return nil }, func(error) {})
	bucket := []byte("t")
	if err := s.Batch(ctx, func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		t.Fatal(err)
	}
	changes, cancel, err := s.Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	unseen := 0
	for i := range 50 {
		select {
		case <-changes:
		default:
		}
		done := make(chan error, 1)
		go func() {
			done <- s.Batch(ctx, func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put([]byte("k"), fmt.Append(nil, i)) })
		}()
		<-changes
		if !s.SeenByTrailers() {
			unseen++
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if unseen > 0 {
		t.Errorf("%d of 50 commits were news to the watcher they woke, though the trailers ran in them", unseen)
	}
}
