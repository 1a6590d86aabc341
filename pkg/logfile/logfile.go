// Package logfile appends to a log file that several processes share (one
// `lm mcp` per agent, say) and keeps it bounded: when the next write would
// take it past its cap, the file moves to PATH.1 (replacing the previous
// one) and starts afresh, so the newest lines are always kept in at most
// twice the cap.
package logfile

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// DefaultMax bounds a log and its one rotated copy.
const DefaultMax = 1 << 20

// Log is a shared, capped log file. Each Write is one record, appended
// whole under an exclusive lock on PATH.lock, so records from different
// processes never interleave and only one process rotates.
type Log struct {
	Path string
	Max  int64
}

// New returns the log at path, capped at max bytes (DefaultMax if max <= 0).
func New(path string, max int64) *Log {
	if max <= 0 {
		max = DefaultMax
	}
	return &Log{Path: path, Max: max}
}

// Write appends p, rotating first when p would take the file past Max. It
// opens and closes the file every time: records are rare, and another
// process may have rotated the file since.
func (l *Log) Write(p []byte) (int, error) {
	n := len(p)
	if int64(len(p)) > l.Max {
		p = p[int64(len(p))-l.Max:] // only the newest Max bytes can be kept
	}
	if err := os.MkdirAll(filepath.Dir(l.Path), 0o700); err != nil {
		return 0, fmt.Errorf("create the log directory: %w", err)
	}
	lock, err := os.OpenFile(l.Path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return 0, err
	}
	defer lock.Close() // closing drops the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return 0, fmt.Errorf("lock %s: %w", l.Path, err)
	}
	f, err := os.OpenFile(l.Path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer func() { f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if fi.Size() > 0 && fi.Size()+int64(len(p)) > l.Max {
		if err := os.Rename(l.Path, l.Path+".1"); err != nil {
			return 0, fmt.Errorf("rotate %s: %w", l.Path, err)
		}
		f.Close()
		if f, err = os.OpenFile(l.Path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
			return 0, err
		}
	}
	if _, err := f.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}
