package jobs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"
)

// A ring file holds the last Capacity bytes a job wrote. Its header
// records the capacity and the total ever written, so cursors are
// monotonic offsets over the whole output, not over what is retained.
//
//	0  magic "LMRING1\x00"
//	8  capacity (uint64, little endian)
//	16 written  (uint64): bytes ever written; byte n lives at dataStart + n%capacity
//	24 reserved (uint64): written plus the write in progress
//	32 data
//
// One writer (the supervisor) announces a write in reserved, copies the
// data, then advances written. A reader in another process takes written
// before copying and reserved after, and drops what reserved says may have
// been overwritten meanwhile, like a seqlock: a byte is only returned if
// no write that could replace it had begun when the copy ended.
const (
	ringMagic = "LMRING1\x00"
	dataStart = 32
)

// DefaultLogSize is a job's default ring capacity.
const DefaultLogSize = 4 << 20

// ringWriter appends to a ring file.
type ringWriter struct {
	f        *os.File
	capacity uint64
	written  uint64
	word     [8]byte
}

func createRing(path string, capacity int64) (*ringWriter, error) {
	if capacity <= 0 {
		return nil, fmt.Errorf("ring capacity must be positive, got %d", capacity)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	var h [dataStart]byte
	copy(h[:], ringMagic)
	binary.LittleEndian.PutUint64(h[8:], uint64(capacity))
	if _, err := f.WriteAt(h[:], 0); err != nil {
		f.Close()
		return nil, err
	}
	return &ringWriter{f: f, capacity: uint64(capacity)}, nil
}

// Write stores p, evicting the oldest bytes when full.
func (w *ringWriter) Write(p []byte) (int, error) {
	n := len(p)
	end := w.written + uint64(n)
	if uint64(len(p)) > w.capacity {
		p = p[uint64(len(p))-w.capacity:] // only the tail can be kept
	}
	if err := w.putWord(24, end); err != nil { // reserved
		return 0, err
	}
	pos := (end - uint64(len(p))) % w.capacity
	first := min(uint64(len(p)), w.capacity-pos)
	if _, err := w.f.WriteAt(p[:first], int64(dataStart+pos)); err != nil {
		return 0, err
	}
	if rest := p[first:]; len(rest) > 0 {
		if _, err := w.f.WriteAt(rest, dataStart); err != nil {
			return 0, err
		}
	}
	if err := w.putWord(16, end); err != nil { // written
		return 0, err
	}
	w.written = end
	return n, nil
}

func (w *ringWriter) putWord(offset int64, v uint64) error {
	binary.LittleEndian.PutUint64(w.word[:], v)
	_, err := w.f.WriteAt(w.word[:], offset)
	return err
}

func (w *ringWriter) Close() error { return w.f.Close() }

// Chunk is a read from a ring: data from cursor From up to cursor To.
type Chunk struct {
	From    uint64 `json:"from" jsonschema:"the cursor the data starts at"`
	To      uint64 `json:"to" jsonschema:"the next cursor: pass it as from to continue"`
	Data    string `json:"data"`
	Evicted uint64 `json:"evicted" jsonschema:"bytes asked for but already evicted from the buffer"`
	// Written is the total the job has written so far.
	Written uint64 `json:"bytes_emitted"`
}

// ringState reads the header: capacity and bytes ever written.
func ringState(f *os.File) (capacity, written uint64, err error) {
	var h [24]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return 0, 0, fmt.Errorf("read log header: %w", err)
	}
	if string(h[:8]) != ringMagic {
		return 0, 0, errors.New("not a job log")
	}
	return binary.LittleEndian.Uint64(h[8:]), binary.LittleEndian.Uint64(h[16:]), nil
}

// reservedAfterCopy is how far the writer may have written once a copy
// ended: the reserved word, or written for a ring whose writer predates it.
func reservedAfterCopy(f *os.File) (uint64, error) {
	var h [16]byte
	if _, err := f.ReadAt(h[:], 16); err != nil {
		return 0, fmt.Errorf("read log header: %w", err)
	}
	return max(binary.LittleEndian.Uint64(h[:8]), binary.LittleEndian.Uint64(h[8:])), nil
}

// readRing reads up to max bytes from cursor from. A cursor beyond the end
// reads nothing; bytes before the oldest retained one are reported as
// evicted. A chunk cut short by max ends on a UTF-8 boundary when it can.
func readRing(path string, from uint64, max int) (Chunk, error) {
	f, err := os.Open(path)
	if err != nil {
		return Chunk{}, err
	}
	defer f.Close()
	capacity, written, err := ringState(f)
	if err != nil {
		return Chunk{}, err
	}
	from = min(from, written)
	start := from
	if written > capacity && start < written-capacity {
		start = written - capacity
	}
	end := min(written, start+uint64(max))
	buf := make([]byte, end-start)
	pos := start % capacity
	first := min(uint64(len(buf)), capacity-pos)
	if _, err := f.ReadAt(buf[:first], int64(dataStart+pos)); err != nil && err != io.EOF {
		return Chunk{}, err
	}
	if first < uint64(len(buf)) {
		if _, err := f.ReadAt(buf[first:], dataStart); err != nil && err != io.EOF {
			return Chunk{}, err
		}
	}
	// The writer may have lapped the bytes just copied: whatever a write
	// begun by now could reach is no longer trusted.
	if after, err := reservedAfterCopy(f); err == nil && after > capacity && start < after-capacity {
		drop := min(after-capacity-start, uint64(len(buf)))
		buf, start = buf[drop:], start+drop
	} else if err != nil {
		return Chunk{}, err
	}
	if end < written && len(buf) > 0 {
		i := len(buf) - 1
		for i > 0 && len(buf)-i < utf8.UTFMax && !utf8.RuneStart(buf[i]) {
			i--
		}
		if i > 0 && !utf8.FullRune(buf[i:]) {
			buf = buf[:i]
		}
	}
	return Chunk{From: start, To: start + uint64(len(buf)), Data: string(buf), Evicted: start - from, Written: written}, nil
}
