package store

import (
	"context"
	"fmt"
	"os"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Info describes a store for `lm store info`.
type Info struct {
	Path          string         `json:"path"`
	Exists        bool           `json:"exists"`
	SizeBytes     int64          `json:"size_bytes"`
	SchemaVersion int            `json:"schema_version"`
	BinarySchema  int            `json:"binary_schema_version"`
	Buckets       map[string]int `json:"buckets" jsonschema:"number of keys in each top-level bucket"`
}

// Stat reads the store's size, schema version and bucket sizes.
func (s *Store) Stat(ctx context.Context) (Info, error) {
	if s.err != nil {
		return Info{}, s.err
	}
	info := Info{Path: s.Path, BinarySchema: SchemaVersion, Buckets: map[string]int{}}
	fi, err := os.Stat(s.Path)
	if os.IsNotExist(err) {
		return info, nil
	}
	if err != nil {
		return info, err
	}
	info.Exists = true
	info.SizeBytes = fi.Size()
	err = s.View(ctx, func(tx *bolt.Tx) error {
		info.SchemaVersion = Version(tx)
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			info.Buckets[string(name)] = b.Stats().KeyN
			return nil
		})
	})
	return info, err
}

// Check runs bbolt's consistency check (page and freelist integrity) and
// returns the problems found; none means the file is sound.
func (s *Store) Check(ctx context.Context) ([]string, error) {
	var problems []string
	err := s.View(ctx, func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			problems = append(problems, err.Error())
		}
		return nil
	})
	return problems, err
}

// Backup writes a consistent copy of the store to path while other
// processes keep reading it.
func (s *Store) Backup(ctx context.Context, path string) (int64, error) {
	if strings.TrimSpace(path) == "" {
		return 0, fmt.Errorf("backup needs a destination file")
	}
	// Copy to a temporary file and rename it into place, so a failed or
	// interrupted backup never leaves a truncated file under the name.
	tmp := path + ".tmp"
	var n int64
	err := s.View(ctx, func(tx *bolt.Tx) error {
		n = tx.Size()
		return tx.CopyFile(tmp, 0o600)
	})
	if err != nil {
		os.Remove(tmp)
		return 0, err
	}
	return n, os.Rename(tmp, path)
}
