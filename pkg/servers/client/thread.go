package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"regexp"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/op"
)

// The page's Ask view keeps its conversation in the store, one thread per
// page session (an id the browser keeps), so a reload or a second tab
// shows it. A thread's turns are the page's own records — requests,
// proposals, verdicts, results, answers — which lm stores whole and bounds
// but does not read.

var (
	threadBucket      = []byte("agent.ask_threads")       // session -> Thread
	threadSavedBucket = []byte("agent.ask_threads_saved") // session -> when saved (unix ns, big-endian)
)

const (
	// MaxThreadBytes bounds one thread: saving a larger one drops its
	// oldest turns.
	MaxThreadBytes = 1 << 20
	// maxThreads bounds the sessions kept: saving one more drops the
	// thread saved longest ago.
	maxThreads = 50
)

// Thread is a page session's Ask conversation, oldest turn first.
type Thread struct {
	Turns     []json.RawMessage `json:"turns"`
	UpdatedAt *time.Time        `json:"updated_at,omitempty"`
	// Dropped counts the oldest turns a save left out to stay within
	// MaxThreadBytes.
	Dropped int `json:"dropped,omitempty"`
}

var sessionID = regexp.MustCompile(`^[A-Za-z0-9_-]{8,64}$`)

func checkSession(session string) error {
	if !sessionID.MatchString(session) {
		return op.Errorf(op.KindInvalid, "page session %q is not 8 to 64 letters, digits, - or _", session)
	}
	return nil
}

// LoadThread returns a session's thread; one never saved has no turns.
func LoadThread(ctx context.Context, env *op.Env, session string) (Thread, error) {
	t := Thread{Turns: []json.RawMessage{}}
	if err := checkSession(session); err != nil {
		return t, err
	}
	err := env.Store.View(ctx, func(tx *bolt.Tx) error {
		if b := tx.Bucket(threadBucket); b != nil {
			if v := b.Get([]byte(session)); v != nil {
				return json.Unmarshal(v, &t)
			}
		}
		return nil
	})
	return t, err
}

// SaveThread replaces a session's thread with turns, each a JSON object,
// dropping the oldest turns beyond MaxThreadBytes.
func SaveThread(ctx context.Context, env *op.Env, session string, turns []json.RawMessage) (Thread, error) {
	if err := checkSession(session); err != nil {
		return Thread{}, err
	}
	size := 0
	for i, turn := range turns {
		if trimmed := bytes.TrimSpace(turn); len(trimmed) == 0 || trimmed[0] != '{' {
			return Thread{}, op.Errorf(op.KindInvalid, "turn %d is not a JSON object", i+1)
		}
		size += len(turn) + 1
	}
	now := env.Now().UTC()
	t := Thread{Turns: turns, UpdatedAt: &now}
	for size > MaxThreadBytes && len(t.Turns) > 0 {
		size -= len(t.Turns[0]) + 1
		t.Turns, t.Dropped = t.Turns[1:], t.Dropped+1
	}
	data, err := json.Marshal(t)
	if err != nil {
		return Thread{}, err
	}
	err = env.Store.Update(ctx, func(tx *bolt.Tx) error {
		threads, err := tx.CreateBucketIfNotExists(threadBucket)
		if err != nil {
			return err
		}
		saved, err := tx.CreateBucketIfNotExists(threadSavedBucket)
		if err != nil {
			return err
		}
		if err := threads.Put([]byte(session), data); err != nil {
			return err
		}
		if err := saved.Put([]byte(session), binary.BigEndian.AppendUint64(nil, uint64(now.UnixNano()))); err != nil {
			return err
		}
		return dropOldThreads(threads, saved)
	})
	return t, err
}

// dropOldThreads keeps the maxThreads threads saved last.
func dropOldThreads(threads, saved *bolt.Bucket) error {
	type when struct {
		session []byte
		at      uint64
	}
	var all []when
	saved.ForEach(func(k, v []byte) error {
		if len(v) == 8 {
			all = append(all, when{bytes.Clone(k), binary.BigEndian.Uint64(v)})
		}
		return nil
	})
	if len(all) <= maxThreads {
		return nil
	}
	slices.SortFunc(all, func(a, b when) int { return cmp.Compare(a.at, b.at) })
	for _, w := range all[:len(all)-maxThreads] {
		if err := threads.Delete(w.session); err != nil {
			return err
		}
		if err := saved.Delete(w.session); err != nil {
			return err
		}
	}
	return nil
}

// ClearThread forgets a session's thread.
func ClearThread(ctx context.Context, env *op.Env, session string) error {
	if err := checkSession(session); err != nil {
		return err
	}
	return env.Store.Update(ctx, func(tx *bolt.Tx) error {
		for _, name := range [][]byte{threadBucket, threadSavedBucket} {
			if b := tx.Bucket(name); b != nil {
				if err := b.Delete([]byte(session)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
