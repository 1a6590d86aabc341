package cappedlog

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"time"
)

// Reading a capped log while it is written: Tail for its last lines, then
// Follow from where Tail stopped, across rotations.

// Tail returns the last n lines of the file at path and the offset just
// past what it read, where Follow continues without losing or repeating a
// line.
func Tail(path string, n int) (lines []string, end int64, err error) {
	file, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return []string{}, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer file.Close()
	lines = make([]string, 0, n)
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		if n <= 0 {
			continue
		}
		if len(lines) == n {
			lines = append(lines[:0], lines[1:]...)
		}
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, 0, err
	}
	end, err = file.Seek(0, io.SeekCurrent)
	return lines, end, err
}

// Follow copies what is written to the file at path from offset on to w
// until ctx ends. When the log is rotated (another file takes the path) it
// finishes the old file and goes on from the start of the new one.
func Follow(ctx context.Context, path string, offset int64, w io.Writer) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { file.Close() }()
	if _, err := file.Seek(offset, io.SeekStart); err != nil {
		return err
	}
	for {
		if _, err := io.Copy(w, file); err != nil {
			return err
		}
		if next, err := os.Open(path); err == nil {
			if rotated(file, next) {
				if _, err := io.Copy(w, file); err != nil {
					next.Close()
					return err
				}
				file.Close()
				file = next
				continue
			}
			next.Close()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// rotated reports whether b is another file than a.
func rotated(a, b *os.File) bool {
	sa, err1 := a.Stat()
	sb, err2 := b.Stat()
	return err1 == nil && err2 == nil && !os.SameFile(sa, sb)
}

// Lines is a writer for Follow that hands each whole line to emit, without
// its line break: a line written in pieces is held until it ends.
func Lines(emit func(line string) error) io.Writer { return &lines{emit: emit} }

type lines struct {
	buf  bytes.Buffer
	emit func(string) error
}

func (w *lines) Write(p []byte) (int, error) {
	w.buf.Write(p)
	for {
		i := bytes.IndexByte(w.buf.Bytes(), '\n')
		if i < 0 {
			return len(p), nil
		}
		if err := w.emit(string(w.buf.Next(i + 1)[:i])); err != nil {
			return 0, err
		}
	}
}
