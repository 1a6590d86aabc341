package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Dropped is a record, or the rest of a bucket, a salvage could not copy.
type Dropped struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key,omitempty" jsonschema:"the record's key; empty when the bucket could not be read at all"`
	After  string `json:"after,omitempty" jsonschema:"the last key read before the rest of the bucket became unreadable"`
	Reason string `json:"reason"`
}

// SalvageReport says what a salvage copied and what it left behind.
type SalvageReport struct {
	Copied  map[string]int `json:"copied" jsonschema:"records copied, by bucket"`
	Dropped []Dropped      `json:"dropped"`
}

// Salvage copies every record it can read, and that the bucket's
// declaration accepts, into a fresh store at path, and reports what it
// dropped. It reads the store only, so it works on a store that refuses
// writes; put the result in place with [Store.Restore].
func (s *Store) Salvage(ctx context.Context, path string, replace bool) (SalvageReport, error) {
	report := SalvageReport{Copied: map[string]int{}, Dropped: []Dropped{}}
	err := s.View(ctx, func(src *bolt.Tx) error {
		var names [][]byte
		guardedDrop(&report, "", func() {
			src.ForEach(func(name []byte, _ *bolt.Bucket) error {
				names = append(names, append([]byte(nil), name...))
				return nil
			})
		})
		return writeNew(path, replace, func(f *os.File) error {
			// The temporary file was created exclusively and is empty:
			// bbolt makes a new store in it.
			db, err := bolt.Open(f.Name(), 0o600, &bolt.Options{Timeout: time.Second})
			if err != nil {
				return err
			}
			err = db.Update(func(dst *bolt.Tx) error {
				for _, name := range names {
					if err := copyBucket(src, dst, name, &report); err != nil {
						return err
					}
				}
				for _, repair := range repairs {
					if err := repair(dst); err != nil {
						return fmt.Errorf("rebuild the salvaged store: %w", err)
					}
				}
				// Count what the fresh store holds: a rebuild may have
				// dropped index entries of dropped records.
				return dst.ForEach(func(name []byte, b *bolt.Bucket) error {
					n := 0
					c := b.Cursor()
					for k, _ := c.First(); k != nil; k, _ = c.Next() {
						n++
					}
					report.Copied[string(name)] = n
					return nil
				})
			})
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			return err
		})
	})
	return report, err
}

// copyBucket copies one top-level bucket's readable records. A declared
// bucket keeps only the records its readers would accept; another bucket
// (the schema version, a newer binary's data) is copied as it is.
func copyBucket(src, dst *bolt.Tx, name []byte, report *SalvageReport) error {
	out, err := dst.CreateBucketIfNotExists(name)
	if err != nil {
		return fmt.Errorf("salvage bucket %s: %w", name, err)
	}
	check := declaredChecker(string(name))
	var last []byte
	var putErr error
	guardedDrop(report, string(name), func() {
		b := src.Bucket(name)
		if b == nil {
			return
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			last = append(last[:0], k...)
			if v == nil {
				report.Dropped = append(report.Dropped, Dropped{Bucket: string(name), Key: printable(k), Reason: "a nested bucket, which no lm bucket has"})
				continue
			}
			if check != nil {
				if err := check.checkRecord(k, v); err != nil {
					var ce *CorruptError
					reason := err.Error()
					if errors.As(err, &ce) {
						reason = ce.Err.Error()
					}
					report.Dropped = append(report.Dropped, Dropped{Bucket: string(name), Key: printable(k), Reason: reason})
					continue
				}
			}
			if putErr = out.Put(append([]byte(nil), k...), append([]byte(nil), v...)); putErr != nil {
				return
			}
		}
		if seq := b.Sequence(); seq > 0 {
			putErr = out.SetSequence(seq)
		}
	})
	if n := len(report.Dropped); n > 0 && report.Dropped[n-1].Bucket == string(name) && report.Dropped[n-1].Key == "" && last != nil {
		report.Dropped[n-1].After = printable(last)
	}
	return putErr
}

// guardedDrop runs fn and records a panic or fault in it (a damaged page)
// as the rest of bucket dropped.
func guardedDrop(report *SalvageReport, bucket string, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			report.Dropped = append(report.Dropped, Dropped{Bucket: bucket, Reason: readFailure(r)})
		}
	}()
	fn()
}

// Restore puts the store file at from in place of this store, after checking
// that it is sound. The store it replaces is kept beside it, renamed with the
// time, and its damage mark is removed. It returns where the old store went
// ("" when there was none).
func (s *Store) Restore(ctx context.Context, from string) (string, error) {
	if fi, err := os.Stat(from); err != nil {
		return "", err
	} else if cur, err := os.Stat(s.Path); err == nil && os.SameFile(fi, cur) {
		return "", fmt.Errorf("%s is the store itself", from)
	}
	problems, err := New(from, s.LockTimeout).problems(ctx)
	if err != nil {
		return "", fmt.Errorf("check %s: %w", from, err)
	}
	if len(problems) > 0 {
		return "", &CorruptError{Path: from, Err: fmt.Errorf("%d problems, the first: %s", len(problems), problems[0])}
	}
	if err := s.checkKind(); err != nil {
		return "", err
	}
	in, err := os.Open(from)
	if err != nil {
		return "", err
	}
	defer in.Close()
	kept := ""
	err = s.locked(ctx, true, func(lock *fileLock) error {
		if _, err := os.Stat(s.Path); err == nil {
			name := fmt.Sprintf("%s.replaced-%s", s.Path, time.Now().UTC().Format("20060102T150405.000000000Z"))
			if err := os.Link(s.Path, name); err != nil {
				return fmt.Errorf("keep the replaced store: %w", err)
			}
			kept = name
		}
		if err := writeNew(s.Path, true, func(f *os.File) error {
			_, err := io.Copy(f, in)
			return err
		}); err != nil {
			return err
		}
		if err := s.clearDamaged(); err != nil {
			return err
		}
		lock.notify()
		return nil
	})
	return kept, err
}
