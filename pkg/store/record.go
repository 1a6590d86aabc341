package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

// CorruptError is a part of the store that cannot be read: one record (Bucket
// and Key set) or the file itself (the b-tree, its pages, its size). Readers
// get it instead of a panic or a silently wrong answer; the rest of the store
// stays readable.
type CorruptError struct {
	Path   string // the store file; set by the transaction that met it
	Bucket string
	Key    string // printable: text as is, binary as hex
	Err    error
}

func (e *CorruptError) Error() string {
	record := fmt.Sprintf("record %s in bucket %s is damaged: %v", e.Key, e.Bucket, e.Err)
	switch {
	case e.Bucket == "" && e.Path == "":
		return fmt.Sprintf("the store is damaged: %v", e.Err)
	case e.Bucket == "":
		return fmt.Sprintf("store %s is damaged: %v", e.Path, e.Err)
	case e.Path == "":
		return record
	}
	return fmt.Sprintf("store %s: %s", e.Path, record)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Bucket declares a top-level bucket of records: the shape of its keys and
// the type of its values. Every read of the bucket decodes through it, so a
// damaged record becomes one [CorruptError] naming the bucket and the key,
// and [Store.Check] rejects exactly the records a reader would.
type Bucket[T any] struct {
	name   []byte
	key    KeyShape
	decode func(k, v []byte) (T, error)
	encode func(T) ([]byte, error)
}

// KeyShape checks a key's bytes; nil for a valid key.
type KeyShape func([]byte) error

// AnyKey accepts every non-empty key.
func AnyKey(k []byte) error {
	if len(k) == 0 {
		return errors.New("empty key")
	}
	return nil
}

// Uint64Key accepts the 8-byte big-endian numbers used as sort keys.
func Uint64Key(k []byte) error {
	if len(k) != 8 {
		return fmt.Errorf("key is %d bytes, not an 8-byte number", len(k))
	}
	return nil
}

// PrefixedUint64Key accepts an 8-byte big-endian number followed by a
// non-empty suffix (a time, then an id).
func PrefixedUint64Key(k []byte) error {
	if len(k) <= 8 {
		return fmt.Errorf("key is %d bytes, not an 8-byte number followed by an id", len(k))
	}
	return nil
}

// JSON declares a bucket whose values are JSON documents of type T. check,
// when not nil, adds rules the type cannot express (a status from a fixed
// set, a field another one requires).
func JSON[T any](name string, key KeyShape, check func(T) error) *Bucket[T] {
	return declare(&Bucket[T]{
		name: []byte(name),
		key:  key,
		decode: func(_, v []byte) (T, error) {
			var out T
			if err := json.Unmarshal(v, &out); err != nil {
				return out, err
			}
			if check != nil {
				return out, check(out)
			}
			return out, nil
		},
		encode: func(v T) ([]byte, error) { return json.Marshal(v) },
	})
}

// Text declares a bucket whose values are non-empty UTF-8 text (an id, a
// key of another bucket).
func Text(name string, key KeyShape) *Bucket[string] {
	return declare(&Bucket[string]{
		name: []byte(name),
		key:  key,
		decode: func(_, v []byte) (string, error) {
			if len(v) == 0 || !utf8.Valid(v) {
				return "", errors.New("value is not UTF-8 text")
			}
			return string(v), nil
		},
		encode: func(v string) ([]byte, error) { return []byte(v), nil },
	})
}

// Declare declares a bucket whose values decode's rules read (a bucket
// mixing counters and documents under fixed keys).
func Declare[T any](name string, key KeyShape, decode func(k, v []byte) (T, error), encode func(T) ([]byte, error)) *Bucket[T] {
	return declare(&Bucket[T]{name: []byte(name), key: key, decode: decode, encode: encode})
}

// Name is the bucket's name in the file.
func (b *Bucket[T]) Name() []byte { return b.name }

// Of is the bucket in tx, nil when it does not exist yet (read it as empty).
func (b *Bucket[T]) Of(tx *bolt.Tx) *bolt.Bucket { return tx.Bucket(b.name) }

// create returns the bucket in a write transaction, creating it on first use.
func (b *Bucket[T]) create(tx *bolt.Tx) (*bolt.Bucket, error) {
	bk, err := tx.CreateBucketIfNotExists(b.name)
	if err != nil {
		return nil, b.corrupt(nil, fmt.Errorf("create bucket: %w", err))
	}
	return bk, nil
}

// CheckKey checks an entry's key alone, for a caller that never reads the
// record (one deleting it).
func (b *Bucket[T]) CheckKey(k []byte) error {
	if err := b.key(k); err != nil {
		return b.corrupt(k, err)
	}
	return nil
}

// Decode reads one entry met through a cursor of the bucket.
func (b *Bucket[T]) Decode(k, v []byte) (T, error) {
	var zero T
	if err := b.CheckKey(k); err != nil {
		return zero, err
	}
	if v == nil {
		return zero, b.corrupt(k, errors.New("a nested bucket where a record belongs"))
	}
	out, err := b.decode(k, v)
	if err != nil {
		return zero, b.corrupt(k, err)
	}
	return out, nil
}

// Get reads the record at key; found is false when there is none.
func (b *Bucket[T]) Get(tx *bolt.Tx, key []byte) (v T, found bool, err error) {
	bk := b.Of(tx)
	if bk == nil {
		return v, false, nil
	}
	k, raw := bk.Cursor().Seek(key)
	if k == nil || string(k) != string(key) {
		return v, false, nil
	}
	v, err = b.Decode(k, raw)
	return v, err == nil, err
}

// Put writes the record at key, creating the bucket on first use.
func (b *Bucket[T]) Put(tx *bolt.Tx, key []byte, v T) error {
	bk, err := b.create(tx)
	if err != nil {
		return err
	}
	raw, err := b.encode(v)
	if err != nil {
		return fmt.Errorf("encode %s record %s: %w", b.name, printable(key), err)
	}
	return bk.Put(key, raw)
}

// ForEach calls fn for every record in key order, stopping at the first
// damaged one or the first error fn returns.
func (b *Bucket[T]) ForEach(tx *bolt.Tx, fn func(k []byte, v T) error) error {
	bk := b.Of(tx)
	if bk == nil {
		return nil
	}
	c := bk.Cursor()
	for k, raw := c.First(); k != nil; k, raw = c.Next() {
		v, err := b.Decode(k, raw)
		if err != nil {
			return err
		}
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

func (b *Bucket[T]) corrupt(k []byte, err error) *CorruptError {
	return &CorruptError{Bucket: string(b.name), Key: printable(k), Err: err}
}

// checkAll reports every record of the bucket a reader would reject.
func (b *Bucket[T]) checkAll(tx *bolt.Tx, report func(error)) {
	bk := b.Of(tx)
	if bk == nil {
		return
	}
	c := bk.Cursor()
	for k, raw := c.First(); k != nil; k, raw = c.Next() {
		if _, err := b.Decode(k, raw); err != nil {
			report(err)
		}
	}
}

// printable shows a key as text when it is text, else as hex.
func printable(k []byte) string {
	if k == nil {
		return ""
	}
	if utf8.Valid(k) {
		printable := true
		for _, r := range string(k) {
			if r < 0x20 || r == 0x7f {
				printable = false
				break
			}
		}
		if printable {
			return string(k)
		}
	}
	return fmt.Sprintf("0x%x", k)
}

// repairs restore the invariants that span buckets (indexes, counters) in a
// freshly salvaged store, whose records were copied one by one.
var repairs []func(*bolt.Tx) error

// AfterSalvage registers fn to run on every salvaged store, in the same
// transaction that filled it: it rebuilds what refers to records that were
// dropped.
func AfterSalvage(fn func(*bolt.Tx) error) bool {
	declaredMu.Lock()
	defer declaredMu.Unlock()
	repairs = append(repairs, fn)
	return true
}

// declared lists every bucket the binary's packages declare, so a check
// knows each one's rules without importing the domains.
var (
	declaredMu sync.Mutex
	declared   = map[string]checker{}
)

type checker interface {
	checkAll(tx *bolt.Tx, report func(error))
	checkRecord(k, v []byte) error
}

func (b *Bucket[T]) checkRecord(k, v []byte) error {
	_, err := b.Decode(k, v)
	return err
}

func declare[T any](b *Bucket[T]) *Bucket[T] {
	declaredMu.Lock()
	defer declaredMu.Unlock()
	if _, dup := declared[string(b.name)]; dup {
		panic(fmt.Sprintf("store: bucket %s declared twice", b.name))
	}
	declared[string(b.name)] = b
	return b
}

// declaredBuckets returns the declared buckets' names, sorted.
func declaredBuckets() []string {
	declaredMu.Lock()
	defer declaredMu.Unlock()
	names := make([]string, 0, len(declared))
	for n := range declared {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func declaredChecker(name string) checker {
	declaredMu.Lock()
	defer declaredMu.Unlock()
	return declared[name]
}
