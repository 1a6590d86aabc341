package store

import (
	"context"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// CompactReport is what a compaction did.
type CompactReport struct {
	BytesBefore int64 `json:"bytes_before"`
	BytesAfter  int64 `json:"bytes_after"`
}

// Compact rewrites the store without its free pages. bbolt never returns
// pages to the file system: a store that once held 100,000 instructions
// keeps its size after they are pruned, and each commit writes its whole
// list of free pages. Compact holds the store's lock for the whole copy, so
// no process reads or writes meanwhile, copies every bucket into a fresh
// file beside the store, syncs it and renames it into place; a crash at
// any point leaves either the old file or the new one, whole.
func (s *Store) Compact(ctx context.Context) (CompactReport, error) {
	if s.err != nil {
		return CompactReport{}, s.err
	}
	if err := s.checkKind(); err != nil {
		return CompactReport{}, err
	}
	before, err := os.Stat(s.Path)
	if err != nil {
		return CompactReport{}, err
	}
	err = s.locked(ctx, true, func(lock *fileLock) error {
		// Checked under the lock the copy holds: no write lands between.
		problems, err := s.problemsIn(func(fn func(*bolt.Tx) error) error { return s.viewHeld(ctx, lock, fn) })
		if err != nil {
			return err
		}
		if len(problems) > 0 {
			return s.damaged(true, problems[0])
		}
		if err := s.compactHeld(); err != nil {
			return err
		}
		// Watchers re-read: the file is another one now (and its
		// identity changed, so pages following it reload their state).
		lock.notify()
		return nil
	})
	if err != nil {
		return CompactReport{}, err
	}
	after, err := os.Stat(s.Path)
	if err != nil {
		return CompactReport{}, err
	}
	return CompactReport{BytesBefore: before.Size(), BytesAfter: after.Size()}, nil
}

// compactHeld copies the store into a fresh file and renames it into place,
// under the exclusive lock its caller holds.
func (s *Store) compactHeld() error {
	src, err := bolt.Open(s.Path, 0o600, &bolt.Options{ReadOnly: true, Timeout: s.LockTimeout})
	if err != nil {
		return fmt.Errorf("open store %s: %w", s.Path, err)
	}
	defer src.Close()
	return writeNew(s.Path, true, func(f *os.File) error {
		// bolt.Open wants a path; the temporary file is reopened by name
		// and synced by writeNew after the copy.
		dst, err := bolt.Open(f.Name(), 0o600, &bolt.Options{Timeout: s.LockTimeout})
		if err != nil {
			return err
		}
		// Grown in small steps, the copy ends near the size of its data
		// rather than at the next 16 MiB.
		dst.AllocSize = 64 << 10
		if err := bolt.Compact(dst, src, 64<<20); err != nil {
			dst.Close()
			return fmt.Errorf("compact %s: %w", s.Path, err)
		}
		return dst.Close()
	})
}
