package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/privatefile"
)

// Info describes a store for `lm store info`.
type Info struct {
	Path          string         `json:"path"`
	Exists        bool           `json:"exists"`
	SizeBytes     int64          `json:"size_bytes"`
	SchemaVersion int            `json:"schema_version"`
	BinarySchema  int            `json:"binary_schema_version"`
	Buckets       map[string]int `json:"buckets" jsonschema:"number of keys in each top-level bucket"`
	// Reclaimable is what 'lm store compact' would give back: the file's
	// size beyond the pages its data, bbolt's two meta pages and its free
	// list occupy.
	Reclaimable int64 `json:"reclaimable_bytes" jsonschema:"about how many bytes lm store compact would free"`
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
		pages := 4 // two meta pages, the free list's, the root's
		err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			st := b.Stats()
			info.Buckets[string(name)] = st.KeyN
			pages += st.BranchPageN + st.BranchOverflowN + st.LeafPageN + st.LeafOverflowN
			return nil
		})
		info.Reclaimable = max(0, info.SizeBytes-int64(pages*tx.DB().Info().PageSize))
		return err
	})
	return info, err
}

// maxProblems bounds a check's report: a badly damaged file can have a
// problem on every page.
const maxProblems = 1000

// Check reports what is wrong with the store: the file's structure first,
// then every record a reader would reject. None means the store is sound;
// a sound check removes the damage mark, a failed one sets it.
func (s *Store) Check(ctx context.Context) ([]string, error) {
	problems, err := s.problems(ctx)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		s.markDamaged(fmt.Sprintf("lm store check found %d problems, the first: %s", len(problems), problems[0]))
	} else if err := s.clearDamaged(); err != nil {
		return nil, err
	}
	return problems, nil
}

// problems lists what is wrong with the store, marking nothing.
func (s *Store) problems(ctx context.Context) ([]string, error) {
	return s.problemsIn(func(fn func(*bolt.Tx) error) error { return s.View(ctx, fn) })
}

// problemsIn is problems, reading the store through view.
func (s *Store) problemsIn(view func(func(*bolt.Tx) error) error) ([]string, error) {
	var problems []string
	report := func(err error) {
		if len(problems) < maxProblems {
			problems = append(problems, err.Error())
		} else if len(problems) == maxProblems {
			problems = append(problems, "more problems not listed")
		}
	}
	err := view(func(tx *bolt.Tx) error {
		s.inspect(tx, report)
		return nil
	})
	var ce *CorruptError
	if errors.As(err, &ce) {
		// Nothing could be read through bbolt: say what the file itself
		// shows, then why reading failed.
		s.inspectFile(report)
		problems, err = append(problems, ce.Error()), nil
	}
	return problems, err
}

// inspect reports the damage in the store tx reads. Its work is bounded by
// the file's size: bbolt's own check, which trusts page pointers and
// overflow counts, runs only after a bounded walk found them sound.
func (s *Store) inspect(tx *bolt.Tx, report func(error)) {
	fi, err := os.Stat(s.Path)
	if err != nil {
		report(err)
		return
	}
	if int64(tx.Size()) > fi.Size() {
		report(truncated(fi.Size(), int64(tx.Size())))
	}
	if !s.walk(tx, report) {
		report(errors.New("not checked: bbolt's own page check and the records, which would follow the broken pages above"))
		return
	}
	for err := range tx.Check() {
		report(err)
	}
	for _, name := range declaredBuckets() {
		guarded(report, "bucket "+name, func() { declaredChecker(name).checkAll(tx, report) })
	}
}

// inspectFile reports what the meta pages and the file's size show, read
// without bbolt.
func (s *Store) inspectFile(report func(error)) {
	f, err := os.Open(s.Path)
	if err != nil {
		report(err)
		return
	}
	defer f.Close()
	m, err := readMeta(f)
	if err != nil {
		report(err)
		return
	}
	if fi, err := f.Stat(); err == nil && uint64(fi.Size()) < m.hwm*m.pageSize {
		report(truncated(fi.Size(), int64(m.hwm*m.pageSize)))
	}
}

func truncated(size, reach int64) error {
	return fmt.Errorf("the file is %d bytes, but its pages reach byte %d: it was truncated", size, reach)
}

// guarded runs fn, reporting a panic or a memory fault in it (a damaged
// page) instead of letting it end the whole inspection.
func guarded(report func(error), what string, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			report(fmt.Errorf("%s: %s", what, readFailure(r)))
		}
	}()
	fn()
}

// Backup writes a consistent copy of a sound store to path while other
// processes keep using it. A damaged store is refused: its copy would carry
// the damage under a name that promises a good store (salvage it instead).
// An existing path is replaced only with replace; a symlink at path is
// replaced, never followed.
func (s *Store) Backup(ctx context.Context, path string, replace bool) (int64, error) {
	if strings.TrimSpace(path) == "" {
		return 0, fmt.Errorf("backup needs a destination file")
	}
	var n int64
	err := s.View(ctx, func(tx *bolt.Tx) error {
		var problems []string
		s.inspect(tx, func(err error) { problems = append(problems, err.Error()) })
		if len(problems) > 0 {
			return &UnsoundError{Path: s.Path, Reason: fmt.Sprintf("%d problems, the first: %s", len(problems), problems[0])}
		}
		n = tx.Size()
		return writeNew(path, replace, func(f *os.File) error {
			_, err := tx.WriteTo(f)
			return err
		})
	})
	return n, err
}

// ExistsError is a destination that exists and may not be replaced.
type ExistsError struct{ Path string }

func (e *ExistsError) Error() string { return fmt.Sprintf("%s exists", e.Path) }

// writeNew writes a file as privatefile.WriteFunc does: through a synced
// temporary file, renamed into place, or linked when replace is false so an
// existing file stays (an *ExistsError).
func writeNew(path string, replace bool, write func(*os.File) error) error {
	err := privatefile.WriteFunc(path, replace, write)
	if errors.Is(err, fs.ErrExist) {
		return &ExistsError{Path: path}
	}
	return err
}
