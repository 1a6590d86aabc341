// Package cappedlog is a log file bounded in size: when the next write
// would take it past its limit it is renamed PATH.1 (older copies move to
// PATH.2 … PATH.N, the oldest dropped) and a fresh file takes its place, so
// the newest output is always kept in at most (N+1)×limit bytes. A [Log]
// has one writing process (the gateway's log, a supervised server's
// stderr); a [Shared] log has many (one lm mcp per agent).
package cappedlog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Log is safe for concurrent use.
type Log struct {
	path  string
	max   int64
	keep  int
	stdio bool

	mu   sync.Mutex
	f    *os.File
	size int64
}

// Open appends to path, keeping at most max bytes in it and keep rotated
// copies beside it.
func Open(path string, max int64, keep int) (*Log, error) {
	if max <= 0 || keep < 1 {
		return nil, fmt.Errorf("log %s: a limit of %d bytes and %d copies cannot hold anything", path, max, keep)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create the log directory: %w", err)
	}
	l := &Log{path: path, max: max, keep: keep}
	if err := l.open(os.O_APPEND); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Log) open(mode int) error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|mode, 0o600)
	if err != nil {
		return err
	}
	l.f, l.size = f, 0
	if fi, err := f.Stat(); err == nil {
		l.size = fi.Size()
	}
	if l.stdio {
		return l.redirectStdio()
	}
	return nil
}

// FollowStdio makes the log the process's standard output and error, now
// and after every rotation, so that what is written to them without going
// through the log — a runtime crash report — lands in the current file.
func (l *Log) FollowStdio() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stdio = true
	return l.redirectStdio()
}

func (l *Log) redirectStdio() error {
	for _, fd := range []int{1, 2} {
		if err := unix.Dup3(int(l.f.Fd()), fd, 0); err != nil {
			return fmt.Errorf("log %s: make it the standard output: %w", l.path, err)
		}
	}
	return nil
}

// Write appends p, rotating first when p would not fit. A write larger
// than the limit keeps only its newest bytes.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	if int64(len(p)) > l.max {
		p = p[int64(len(p))-l.max:]
	}
	if l.size+int64(len(p)) > l.max {
		if err := l.rotate(); err != nil {
			return 0, err
		}
	}
	written, err := l.f.Write(p)
	l.size += int64(written)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// rotate moves the file aside and opens a fresh one, closing the old file
// only once the new one is open: a rename or open that fails leaves the log
// writing where it was, not closed for good.
func (l *Log) rotate() error {
	if err := rotate(l.path, l.keep); err != nil {
		return err
	}
	old, oldSize := l.f, l.size
	if err := l.open(os.O_TRUNC); err != nil {
		l.f, l.size = old, oldSize
		return err
	}
	return old.Close()
}

// rotate moves path to path.1, and each older copy one number up, dropping
// what would pass keep.
func rotate(path string, keep int) error {
	os.Remove(path + "." + strconv.Itoa(keep))
	for i := keep - 1; i >= 1; i-- {
		os.Rename(path+"."+strconv.Itoa(i), path+"."+strconv.Itoa(i+1))
	}
	if err := os.Rename(path, path+".1"); err != nil {
		return fmt.Errorf("rotate %s: %w", path, err)
	}
	return nil
}

// Close closes the current file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// Shared is a capped log that several processes append to. Each Write is
// one record, appended whole under an exclusive lock on PATH.lock, so
// records from different processes never interleave and only one process
// rotates. Writes are queued and appended in order by a goroutine of the
// log's own, what arrives within batchDelay under one lock: opening,
// locking and checking the file cost more than an MCP tool call, whose log
// line must neither hold up its answer nor take the processor from the
// next call. Close waits until every record is in the file; a process
// killed outright loses what is still queued: the last batchDelay of
// records, more while another process holds the file's lock.
type Shared struct {
	path string
	max  int64
	keep int

	mu      sync.Mutex
	room    *sync.Cond // signalled when the queue shrinks
	queue   [][]byte
	wake    chan struct{} // a record is queued
	closing chan struct{} // closed by Close
	closed  bool
	written chan struct{} // closed when the last queued record is appended
}

// batchDelay is how long records gather before they are appended together.
const batchDelay = 20 * time.Millisecond

// maxQueued bounds the records waiting to be appended: a Write past it
// waits, so a log on a stalled disk slows its writers rather than filling
// memory.
const maxQueued = 1024

// OpenShared returns the shared log at path, capped at max bytes with keep
// rotated copies.
func OpenShared(path string, max int64, keep int) (*Shared, error) {
	if max <= 0 || keep < 1 {
		return nil, fmt.Errorf("log %s: a limit of %d bytes and %d copies cannot hold anything", path, max, keep)
	}
	l := &Shared{path: path, max: max, keep: keep, wake: make(chan struct{}, 1), closing: make(chan struct{}), written: make(chan struct{})}
	l.room = sync.NewCond(&l.mu)
	go l.run()
	return l, nil
}

// Write queues p as one record; after Close it appends at once.
func (l *Shared) Write(p []byte) (int, error) {
	l.mu.Lock()
	for len(l.queue) >= maxQueued && !l.closed {
		l.room.Wait()
	}
	if l.closed {
		l.mu.Unlock()
		return len(p), l.append([][]byte{p})
	}
	l.queue = append(l.queue, bytes.Clone(p))
	select {
	case l.wake <- struct{}{}:
	default:
	}
	l.mu.Unlock()
	return len(p), nil
}

// Close appends what is queued and returns once it is in the file.
func (l *Shared) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.closing)
	}
	l.mu.Unlock()
	<-l.written
	return nil
}

func (l *Shared) run() {
	defer close(l.written)
	for {
		select {
		case <-l.wake:
		case <-l.closing:
			l.flush()
			return
		}
		select {
		case <-time.After(batchDelay):
		case <-l.closing:
		}
		l.flush()
	}
}

// flush appends the records queued so far. A log that cannot be written
// loses its lines, not its writers' work.
func (l *Shared) flush() {
	l.mu.Lock()
	batch := l.queue
	l.queue = nil
	l.room.Broadcast()
	l.mu.Unlock()
	l.append(batch)
}

// append adds records to the file, whole and in order, under the lock,
// rotating first when a record would take the file past the cap.
func (l *Shared) append(records [][]byte) error {
	if len(records) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return fmt.Errorf("create the log directory: %w", err)
	}
	lock, err := os.OpenFile(l.path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close() // closing drops the lock
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", l.path, err)
	}
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer func() { f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	for _, p := range records {
		if int64(len(p)) > l.max {
			p = p[int64(len(p))-l.max:]
		}
		if size > 0 && size+int64(len(p)) > l.max {
			f.Close()
			if err := rotate(l.path, l.keep); err != nil {
				return err
			}
			if f, err = os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
				return err
			}
			size = 0
		}
		if _, err := f.Write(p); err != nil {
			return err
		}
		size += int64(len(p))
	}
	return nil
}
