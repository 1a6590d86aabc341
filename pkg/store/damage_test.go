package store

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

type testRecord struct {
	Name string `json:"name"`
}

var testRecords = JSON("test.records", AnyKey, func(r testRecord) error {
	if r.Name == "" {
		return errors.New("no name")
	}
	return nil
})

// putRaw writes value bytes as they are, as a damaged disk would leave them.
func putRaw(t *testing.T, s *Store, bucket, key, value string) {
	t.Helper()
	if err := s.Update(context.Background(), func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(bucket))
		if err != nil {
			return err
		}
		return b.Put([]byte(key), []byte(value))
	}); err != nil {
		t.Fatal(err)
	}
}

// A bad record is one CorruptError naming the store, the bucket and the
// key, for Get and ForEach alike; the good ones stay readable, and Check
// lists exactly the records a reader rejects.
func TestDamagedRecordIsOneErrorNamingBucketAndKey(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	putRaw(t, s, "test.records", "good", `{"name":"kept"}`)
	putRaw(t, s, "test.records", "garbled", "{\"name\":\"\x01\"}")
	putRaw(t, s, "test.records", "nameless", `{"name":""}`)

	var got testRecord
	err := s.View(ctx, func(tx *bolt.Tx) (err error) {
		got, _, err = testRecords.Get(tx, []byte("good"))
		return err
	})
	if err != nil || got.Name != "kept" {
		t.Fatalf("good record: %+v %v", got, err)
	}
	err = s.View(ctx, func(tx *bolt.Tx) error {
		_, _, err := testRecords.Get(tx, []byte("garbled"))
		return err
	})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Bucket != "test.records" || ce.Key != "garbled" || ce.Path != s.Path ||
		!strings.Contains(err.Error(), s.Path) {
		t.Fatalf("garbled record: %v", err)
	}
	err = s.View(ctx, func(tx *bolt.Tx) error {
		return testRecords.ForEach(tx, func([]byte, testRecord) error { return nil })
	})
	if !errors.As(err, &ce) || ce.Key != "garbled" {
		t.Fatalf("ForEach over a damaged record: %v", err)
	}

	problems, err := s.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 2 || !strings.Contains(problems[0], "record garbled in bucket test.records") ||
		!strings.Contains(problems[1], "record nameless in bucket test.records is damaged: no name") {
		t.Fatalf("check found %q", problems)
	}
	if err := s.Update(ctx, func(*bolt.Tx) error { return nil }); !errors.As(err, new(*UnsoundError)) {
		t.Fatalf("a write after a failed check: %v", err)
	}
}

// rootPage is the page of the store's root bucket.
func rootPage(t *testing.T, s *Store) (pgid, pageSize int) {
	t.Helper()
	s.View(context.Background(), func(tx *bolt.Tx) error {
		pgid, pageSize = int(tx.Cursor().Bucket().Root()), tx.DB().Info().PageSize
		return nil
	})
	return pgid, pageSize
}

// patch overwrites bytes of the store file.
func patch(t *testing.T, path string, at int, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(data, int64(at)); err != nil {
		t.Fatal(err)
	}
}

// A page header claiming four billion overflow pages made bbolt's check
// allocate a map entry for each; the walk before it reports the count and
// the check stays within memory bounded by the file.
func TestCheckIsBoundedByTheFile(t *testing.T) {
	s := newStore(t)
	for i := range 50 {
		putRaw(t, s, "test.records", strings.Repeat("k", i+1), `{"name":"x"}`)
	}
	pgid, pageSize := rootPage(t, s)
	patch(t, s.Path, pgid*pageSize+12, binary.LittleEndian.AppendUint32(nil, 0xFFFFFFFF))

	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	problems, err := s.Check(context.Background())
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if all := strings.Join(problems, "\n"); !strings.Contains(all, "4294967295 overflow pages run past the last page") ||
		!strings.Contains(all, "not checked: bbolt's own page check and the records") {
		t.Fatalf("check of a page with a huge overflow count: %q", problems)
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 64<<20 {
		t.Fatalf("the check allocated %d MB for a store of a few pages", grown>>20)
	}
}

// A page that points back at itself is reported, not followed forever.
func TestCheckReportsAPageReferencedTwice(t *testing.T) {
	s := newStore(t)
	for i := range 400 { // enough keys for a branch page under the root
		putRaw(t, s, "test.records", strings.Repeat("k", 40)+string(rune('a'+i%26))+strings.Repeat("z", i), `{"name":"x"}`)
	}
	ctx := context.Background()
	var branch, pageSize int
	s.View(ctx, func(tx *bolt.Tx) error {
		root := tx.Bucket([]byte("test.records")).Root()
		info, _ := tx.Page(int(root))
		branch, pageSize = int(root), tx.DB().Info().PageSize
		if info != nil && info.Type != "branch" {
			t.Fatalf("the bucket's root is a %s page, not a branch", info.Type)
		}
		return nil
	})
	// The branch's first element's child becomes the branch itself.
	patch(t, s.Path, branch*pageSize+16+8, binary.LittleEndian.AppendUint64(nil, uint64(branch)))
	problems, err := s.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(problems, "\n"), "referenced twice") {
		t.Fatalf("check of a page that loops: %q", problems)
	}
}

// Reads of a truncated store fail with a CorruptError instead of a fault
// that ends the process, and writes are refused.
func TestTruncatedStoreIsContained(t *testing.T) {
	s := newStore(t)
	for i := range 300 {
		putRaw(t, s, "test.records", strings.Repeat("k", i+1), `{"name":"`+strings.Repeat("v", 100)+`"}`)
	}
	ctx := context.Background()
	if err := os.Truncate(s.Path, 12288); err != nil {
		t.Fatal(err)
	}
	err := s.View(ctx, func(tx *bolt.Tx) error {
		return testRecords.ForEach(tx, func([]byte, testRecord) error { return nil })
	})
	if !errors.As(err, new(*CorruptError)) {
		t.Fatalf("read of a truncated store: %v", err)
	}
	err = s.Update(ctx, func(*bolt.Tx) error { t.Fatal("wrote to a truncated store"); return nil })
	if !errors.As(err, new(*UnsoundError)) {
		t.Fatalf("write to a truncated store: %v", err)
	}
	problems, err := s.Check(ctx)
	if err != nil || !strings.Contains(strings.Join(problems, "\n"), "it was truncated") {
		t.Fatalf("check of a truncated store: %q %v", problems, err)
	}
}

// A panic inside a write transaction (a damaged page met mid-way) is an
// error, the transaction is rolled back and the store stays usable in this
// process: nothing waits forever on the open transaction.
func TestPanicInAWriteIsContained(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	putRaw(t, s, "test.records", "before", `{"name":"x"}`)
	err := s.Update(ctx, func(tx *bolt.Tx) error {
		tx.Bucket([]byte("test.records")).Put([]byte("half"), []byte(`{"name":"y"}`))
		panic("a page that is not one")
	})
	var ce *CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "a page that is not one") {
		t.Fatalf("panicking write: %v", err)
	}
	if problems, err := s.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("check after a rolled-back write: %q %v", problems, err)
	}
	putRaw(t, s, "test.records", "after", `{"name":"z"}`)
	s.View(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("test.records")).Get([]byte("half")) != nil {
			t.Error("the panicking write was committed")
		}
		return nil
	})
}

// A runtime error in a transaction's own code (a nil map) fails that call
// but does not mark a sound store damaged: the next write goes through
// without a check in between.
func TestABugInATransactionDoesNotLockTheStore(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	putRaw(t, s, "test.records", "before", `{"name":"x"}`)
	err := s.Update(ctx, func(tx *bolt.Tx) error {
		var m map[string]int
		m["bug"]++
		return nil
	})
	if err == nil {
		t.Fatal("a panicking transaction succeeded")
	}
	if err := s.Update(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("test.records")).Put([]byte("after"), []byte(`{"name":"y"}`))
	}); err != nil {
		t.Fatalf("a write after a bug in another transaction: %v", err)
	}
}
