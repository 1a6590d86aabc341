package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	return New(filepath.Join(t.TempDir(), "sub", "lm.db"), time.Second)
}

func TestCreatesPrivateStoreAtCurrentVersion(t *testing.T) {
	s := newStore(t)
	if err := s.View(context.Background(), func(tx *bolt.Tx) error {
		if v := Version(tx); v != SchemaVersion {
			t.Errorf("new store version %d, want %d", v, SchemaVersion)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("store mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(metaBucket).Put(versionKey, []byte("99"))
	}); err != nil {
		t.Fatal(err)
	}
	err := s.Update(ctx, func(*bolt.Tx) error { t.Fatal("ran on a newer store"); return nil })
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Found != 99 {
		t.Fatalf("update of a newer store: %v", err)
	}
	if err := s.View(ctx, func(*bolt.Tx) error { return nil }); !errors.As(err, &ve) {
		t.Fatalf("view of a newer store: %v", err)
	}
}

func TestMigratesOlderStoreOnRead(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *bolt.Tx) error { return tx.DeleteBucket(metaBucket) }); err != nil {
		t.Fatal(err)
	}
	if err := s.View(ctx, func(tx *bolt.Tx) error {
		if Version(tx) != SchemaVersion {
			t.Errorf("read saw version %d: the store was not migrated first", Version(tx))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestFailedUpdateWritesNothing(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	boom := errors.New("boom")
	err := s.Update(ctx, func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucketIfNotExists([]byte("x"))
		b.Put([]byte("k"), []byte("v"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	s.View(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("x")) != nil {
			t.Error("a failed update left data behind")
		}
		return nil
	})
}

func TestLockTimeoutNamesTheStore(t *testing.T) {
	s := newStore(t)
	s.LockTimeout = 100 * time.Millisecond
	if err := s.Update(context.Background(), func(*bolt.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(s.LockPath(), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	err = s.Update(context.Background(), func(*bolt.Tx) error { return nil })
	var le *LockedError
	if !errors.As(err, &le) || le.Path != s.Path || !errors.Is(err, ErrLocked) {
		t.Fatalf("locked store: %v", err)
	}
}

func TestWatchWakesOnCommit(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	changes, cancel, err := s.Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if err := s.Update(ctx, func(*bolt.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changes:
	case <-time.After(10 * time.Second):
		t.Fatal("no change signal after a commit")
	}
	// A failed update commits nothing and signals nothing.
	s.Update(ctx, func(*bolt.Tx) error { return errors.New("no") })
	select {
	case <-changes:
		t.Fatal("signal after a rolled-back update")
	case <-time.After(100 * time.Millisecond):
	}
}

func TestBackupIsAConsistentCopy(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	s.Update(ctx, func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucketIfNotExists([]byte("x"))
		return b.Put([]byte("k"), []byte("v"))
	})
	dest := filepath.Join(t.TempDir(), "copy.db")
	if _, err := s.Backup(ctx, dest, false); err != nil {
		t.Fatal(err)
	}
	copy := New(dest, time.Second)
	copy.View(ctx, func(tx *bolt.Tx) error {
		if string(tx.Bucket([]byte("x")).Get([]byte("k"))) != "v" {
			t.Error("backup lost data")
		}
		return nil
	})
	if problems, err := copy.Check(ctx); err != nil || len(problems) > 0 {
		t.Fatalf("backup check: %v %v", problems, err)
	}
}

func TestLocate(t *testing.T) {
	t.Setenv("LM_STORE", "")
	t.Setenv("LM_HOME", "/tmp/lm-home")
	if p, _ := Locate("", os.Getenv); p != "/tmp/lm-home/lm.db" {
		t.Errorf("LM_HOME: %s", p)
	}
	t.Setenv("LM_STORE", "/tmp/x.db")
	if p, _ := Locate("", os.Getenv); p != "/tmp/x.db" {
		t.Errorf("LM_STORE: %s", p)
	}
	if p, _ := Locate("/tmp/flag.db", os.Getenv); p != "/tmp/flag.db" {
		t.Errorf("--store: %s", p)
	}
	t.Setenv("LM_STORE", "")
	t.Setenv("LM_HOME", "")
	t.Setenv("XDG_DATA_HOME", "/tmp/xdg")
	if p, _ := Locate("", os.Getenv); p != "/tmp/xdg/lm/lm.db" {
		t.Errorf("XDG_DATA_HOME: %s", p)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/u")
	if p, _ := Locate("", os.Getenv); p != "/home/u/.local/share/lm/lm.db" {
		t.Errorf("HOME: %s", p)
	}
}

// A write transaction that changes nothing leaves the file alone and wakes
// nobody: a waiter that looks again after every wake-up would otherwise
// wake itself forever, writing a page and syncing the disk each time.
func TestUnchangedUpdateWritesAndWakesNothing(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte("things"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	changes, cancel, err := s.Watch()
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	before, _ := os.ReadFile(s.Path)
	if err := s.Update(ctx, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("things"))
		if err != nil {
			return err
		}
		b.Get([]byte("missing"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(s.Path)
	if string(before) != string(after) {
		t.Error("an update that changed nothing rewrote the store")
	}
	select {
	case <-changes:
		t.Error("an update that changed nothing woke watchers")
	case <-time.After(200 * time.Millisecond):
	}

	if err := s.Update(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("things")).Put([]byte("k"), []byte("v"))
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changes:
	case <-time.After(5 * time.Second):
		t.Error("an update that changed the store woke nobody")
	}
}

// A wait for the lock that its caller left, at its timeout or on
// cancellation, takes nothing for good: once the holder lets go, the next
// transaction gets the lock. And a process cannot pile up waits on a lock
// held forever: past its budget, a wait fails at once.
func TestLeftWaitsForTheLockHoldNothing(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.Update(ctx, func(*bolt.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	held, err := acquire(ctx, s.LockPath(), true, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acquire(ctx, s.LockPath(), true, 20*time.Millisecond); !errors.Is(err, ErrLocked) {
		t.Fatalf("a wait past its timeout: %v, want ErrLocked", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := acquire(cancelled, s.LockPath(), true, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait: %v", err)
	}
	saved := blockedWaits
	blockedWaits = waitBudget{free: make(chan struct{}, 1)}
	blockedWaits.reserve() // as if a wait left earlier held the whole budget
	_, err = acquire(ctx, s.LockPath(), true, time.Minute)
	// The waits left above hold their own budget's places: with a spent
	// budget, the transaction below would fail at once whenever one of
	// them held the lock for the moment it takes to drop it.
	blockedWaits = saved
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("a wait past the budget: %v, want ErrLocked at once", err)
	}
	held.release()
	if err := s.Update(ctx, func(*bolt.Tx) error { return nil }); err != nil {
		t.Fatalf("after the holder let go, the waits left behind still hold the lock: %v", err)
	}
}
