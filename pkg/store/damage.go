package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// UnsoundError refuses a write to a damaged store: writing into a b-tree
// whose pages are missing or wrong loses what is left.
type UnsoundError struct {
	Path   string
	Reason string
}

func (e *UnsoundError) Error() string {
	return fmt.Sprintf("store %s is damaged (%s); lm neither writes to it nor copies it as a backup, so that nothing more is lost", e.Path, e.Reason)
}

// UnwritableError is a write the file system refused: read-only media, a
// full disk or quota, a file size limit, no permission. Nothing was written.
type UnwritableError struct {
	Path string
	Err  error
}

func (e *UnwritableError) Error() string {
	return fmt.Sprintf("cannot write to store %s: %v", e.Path, e.Err)
}

func (e *UnwritableError) Unwrap() error { return e.Err }

// isUnwritable reports whether err is the file system refusing a write.
func isUnwritable(err error) bool {
	if err == nil {
		return false
	}
	for _, errno := range []syscall.Errno{syscall.EROFS, syscall.ENOSPC, syscall.EDQUOT, syscall.EFBIG, syscall.EACCES, syscall.EPERM} {
		if errors.Is(err, errno) {
			return true
		}
	}
	// bbolt reports a failed growth of the file as text only.
	return strings.Contains(err.Error(), "file resize error")
}

// fileSizeLimited reports whether this process may only write files up to
// a size (RLIMIT_FSIZE, ulimit -f).
func fileSizeLimited() bool {
	var lim syscall.Rlimit
	return syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim) == nil && lim.Cur != ^uint64(0)
}

// FileError is a store path that names something other than a store file
// (a FIFO, a device, a directory, a dangling symlink).
type FileError struct {
	Path   string
	Reason string
}

func (e *FileError) Error() string { return fmt.Sprintf("store %s %s", e.Path, e.Reason) }

// damagePath is the sidecar file that marks the store damaged: a check found
// problems, or a reader met a broken page. Writes are refused while it
// exists; a passing check, a salvage or a restore removes it.
func (s *Store) damagePath() string { return s.Path + ".damaged" }

// markDamaged records why the store is damaged. A store on read-only media
// cannot be marked; its writes fail anyway.
func (s *Store) markDamaged(reason string) {
	os.WriteFile(s.damagePath(), []byte(reason+"\n"), 0o600)
}

// clearDamaged removes the mark after the store checked sound or was replaced.
// Read-only media refuse even the removal of a file that is not there, so
// an absent mark is looked for first.
func (s *Store) clearDamaged() error {
	if !exists(s.damagePath()) {
		return nil
	}
	err := os.Remove(s.damagePath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// contain turns a panic or a memory fault inside a transaction (bbolt
// reading a page that is garbage or past the end of a truncated file) into a
// [CorruptError], so one damaged store never takes a process down with it,
// and names the store in every CorruptError.
//
// It must be deferred directly by the function that opens the database:
// faults are turned into panics only on the goroutine that asked.
func (s *Store) contain(err *error, write bool) {
	if r := recover(); r != nil {
		*err = s.panicked(r)
	}
	if write && isUnwritable(*err) {
		*err = &UnwritableError{Path: s.Path, Err: *err}
	}
	var ce *CorruptError
	if errors.As(*err, &ce) && ce.Path == "" {
		ce.Path = s.Path
	}
}

// panicked describes a panic met while reading the store, and marks the
// store damaged when the panic shows damage.
func (s *Store) panicked(r any) error {
	reason := readFailure(r)
	// A memory fault, or bbolt's own panic on a page it cannot make
	// sense of, is damage: writes stop until a check. A runtime error
	// without an address (a nil map, an index) is more likely a bug in
	// the transaction's own code, and must not lock the person out of
	// a sound store; the call still fails.
	if _, fault := r.(interface{ Addr() uintptr }); fault || !isRuntimeError(r) {
		s.markDamaged(reason)
	}
	return &CorruptError{Err: errors.New(reason)}
}

func isRuntimeError(r any) bool {
	_, ok := r.(runtime.Error)
	return ok
}

// readFailure describes a panic met while reading the store.
func readFailure(r any) string {
	if fault, ok := r.(interface{ Addr() uintptr }); ok {
		return fmt.Sprintf("reading a page failed with a memory fault at %#x: the file is truncated or a page pointer is garbage", fault.Addr())
	}
	return fmt.Sprintf("reading it failed: %v", r)
}

// faultsPanic makes memory faults on this goroutine recoverable panics until
// the returned function restores the previous setting.
func faultsPanic() (restore func()) {
	old := debug.SetPanicOnFault(true)
	return func() { debug.SetPanicOnFault(old) }
}

// checkKind refuses paths that are not a store file before anything is
// opened or created next to them: opening a FIFO blocks forever, and a lock
// file beside /dev/null or a dangling symlink is litter.
func (s *Store) checkKind() error {
	fi, err := os.Stat(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, lerr := os.Lstat(s.Path); lerr == nil {
			return &FileError{Path: s.Path, Reason: "is a symlink to a file that does not exist"}
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("store %s: %w", s.Path, err)
	}
	if !fi.Mode().IsRegular() {
		return &FileError{Path: s.Path, Reason: fmt.Sprintf("is not a regular file (%s)", describeMode(fi.Mode()))}
	}
	return nil
}

func describeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return strings.TrimSpace(m.Type().String())
}

// checkFile runs under the store's lock, before bbolt opens the file: it
// returns the file's size (-1 when it does not exist yet) and refuses a write
// to a store marked damaged, or any use of an empty file, which bbolt would
// silently turn into a new store.
func (s *Store) checkFile(write bool) (int64, error) {
	fi, err := os.Stat(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store %s: %w", s.Path, err)
	}
	if fi.Size() == 0 {
		return 0, s.damaged(write, "the file is empty (0 bytes): whatever it held is gone")
	}
	if write {
		if reason, err := os.ReadFile(s.damagePath()); err == nil {
			return 0, &UnsoundError{Path: s.Path, Reason: strings.TrimSpace(string(reason))}
		}
	}
	return fi.Size(), nil
}

// checkSize compares the pages the store's meta page counts with the bytes
// on disk: a truncated store is served for reads (each read of a missing
// page fails on its own) but never written to.
func (s *Store) checkSize(tx *bolt.Tx, size int64, write bool) error {
	if size < 0 || int64(tx.Size()) <= size {
		return nil
	}
	reason := truncated(size, int64(tx.Size())).Error()
	s.markDamaged(reason)
	if write {
		return &UnsoundError{Path: s.Path, Reason: reason}
	}
	return nil
}

// isDamage reports whether bbolt refused to open a file because its meta
// pages are garbage.
func isDamage(err error) bool {
	return errors.Is(err, berrors.ErrInvalid) || errors.Is(err, berrors.ErrChecksum) ||
		errors.Is(err, berrors.ErrVersionMismatch) || errors.Is(err, berrors.ErrInvalidMapping)
}

// damaged is the error for damage found before a transaction: refusal for a
// write, the damage itself for a read.
func (s *Store) damaged(write bool, reason string) error {
	if write {
		return &UnsoundError{Path: s.Path, Reason: reason}
	}
	return &CorruptError{Path: s.Path, Err: errors.New(reason)}
}
