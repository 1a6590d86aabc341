// Package privatefile edits small files that only their owner may read
// (server configs, secrets, allowlists) so that concurrent editors lose no
// change and a reader never sees half a file.
package privatefile

import (
	"fmt"
	"io/fs"
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
	err := WriteFunc(path, true, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteFunc writes path through a fresh temporary file in the same
// directory — created exclusively, so a symlink planted at a predictable
// name is never followed, and readable by its owner only — that write
// fills. The file is synced, then renamed into place, or, when replace is
// false, linked, so that a file already there stays and the error wraps
// fs.ErrExist. A failed or interrupted write never leaves a partial file
// under the name, and a crash right after never leaves an empty one.
func WriteFunc(path string, replace bool, write func(*os.File) error) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if !replace {
		if _, err := os.Lstat(path); err == nil {
			return &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
		}
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	// CreateTemp makes the file 0600 already; say it, since the mode is
	// the point.
	for _, step := range []func() error{
		func() error { return f.Chmod(0o600) },
		func() error { return write(f) },
		f.Sync,
	} {
		if err := step(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if replace {
		return os.Rename(tmp, path)
	}
	return os.Link(tmp, path)
}
