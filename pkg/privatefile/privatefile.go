// Package privatefile edits small files that only their owner may read
// (server configs, secrets, allowlists) so that concurrent editors lose no
// change and a reader never sees half a file.
package privatefile

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// WithLock runs fn holding an exclusive lock on path's ".lock" sibling, so
// that read-change-write cycles of path by many processes lose no edit. It
// creates path's directory, readable by its owner only, if need be.
func WithLock(path string, fn func() error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	return fn()
}

// Write replaces path with data atomically (a reader sees the old file or
// the new one), readable by its owner only.
func Write(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	// CreateTemp makes the file 0600 already; say it, since the mode is
	// the point.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
