package queue

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"lmtool.dev/lm/pkg/op"
)

// Storage is where one queue lives: the local bbolt store, or a database a
// team shares. The operations reach it only through this interface and [Tx],
// so a backend implements these and nothing else.
type Storage interface {
	// Update runs fn in one read-write transaction: everything fn wrote
	// commits, or (fn failed, the process died) nothing does. After a commit
	// that changed something, Watch channels in every process are signalled.
	// fn may run more than once (a backend may share a commit between
	// concurrent writers and run the others again when one fails), so it
	// sets its results rather than appending to them.
	Update(ctx context.Context, fn func(Tx) error) error
	// View runs fn in a read-only transaction.
	View(ctx context.Context, fn func(Tx) error) error
	// Watch returns a channel that receives a value after any process
	// commits a change that records events or changes the counts (at
	// least), and whenever a change may have been missed (a dropped
	// connection). Subscribe before reading what you wait on; a
	// signal means "read again", never what changed.
	Watch() (changes <-chan struct{}, cancel func(), err error)
	// Identity names the queue itself, not where it is reached: event ids
	// continue only within one identity.
	Identity() string
}

// Tx is one transaction on a queue's storage. Readers return zero values
// after meeting a damaged record or a failed query and remember the first
// such error for Err, which the transaction's caller returns in place of
// whatever was built on the zero values.
type Tx interface {
	Err() error

	// Settings are the stored settings; ok is false before the first write.
	Settings() (s Settings, ok bool)
	PutSettings(Settings) error

	// Get reads one instruction by its whole id.
	Get(id string) (Record, bool)
	// Match lists up to max ids that start with s (or, with tail, end
	// with it), for resolving what a person typed.
	Match(s string, tail bool, max int) []string
	// Pending lists pending instructions in queue order (limit 0: all).
	Pending(limit int) []Record
	// Consumed lists consumed instructions, oldest consumed first; with
	// limit > 0 only the most recent limit of them.
	Consumed(limit int) []Record
	// Position is the 1-based rank of the pending instruction with this
	// order, 0 when there is none.
	Position(order uint64) int
	// Counts are how many instructions are pending and consumed.
	Counts() (pending, consumed int)
	// LastOrder is the order of the last pending instruction, 0 for none.
	// In a write transaction it holds off other writers of the order
	// until commit, so orders computed from it stay unique.
	LastOrder() uint64

	// Insert stores new pending instructions at their Order.
	Insert(rs []Record) error
	// Claim returns up to n instructions from the head of the queue, in
	// queue order, reserved for this transaction: no concurrent
	// transaction's Claim returns them, and the caller marks each consumed
	// with Replace before committing. One call for a round of waiting
	// calls: a database answers it in one round trip.
	Claim(n int) []Record
	// Replace stores r in place of the stored instruction with r's id and
	// r.Version, bumping the version and moving it between the pending and
	// consumed indexes as its status says. A stored version other than
	// r.Version — another transaction changed it meanwhile — is
	// ErrConflict, and nothing is written.
	Replace(r Record) error
	// Acknowledge records that the agent a consumed instruction went to
	// has received it: it clears Unacknowledged and Consumer and bumps the
	// version, without an event. An instruction that is not awaiting its
	// acknowledgement (requeued, deleted, acknowledged) is left alone.
	Acknowledge(id string) error
	// Remove deletes the instruction, under the same version check.
	Remove(r Record) error
	// Reorder gives the pending instructions the order of ids. before is
	// their order as the caller read it: when it is no longer the stored
	// order (another transaction added, took or moved one meanwhile), it
	// is ErrConflict and nothing is written.
	Reorder(before, ids []string) error

	// Agent, PutAgent and Agents keep what the queue knows of each agent.
	Agent(id string) (Agent, bool)
	PutAgent(Agent) error
	Agents() []Agent

	// Emit appends an event to the one ordered log all processes share.
	// Ids grow but need not be consecutive; a reader that read an id never
	// later finds a lower one.
	Emit(typ string, at time.Time, data json.RawMessage) error
	// SkipEvents says n events go unrecorded, so that a reader resuming
	// from before them finds its last event expired: the local store
	// advances its sequence past them, a backend whose ids have gaps
	// anyway drops the events before this transaction's.
	SkipEvents(n int) error
	// EventsSince returns up to limit events after seq, oldest first.
	EventsSince(seq uint64, limit int) []Event
	// LastEvent is the id of the newest event, 0 for none.
	LastEvent() uint64
}

// ErrConflict is a change another transaction made first: the caller reads
// again and decides, never overwrites.
var ErrConflict = errors.New("changed by another process meanwhile")

// A Backend opens the storage a URL names (postgres://…).
type Backend func(ctx context.Context, url string) (Storage, error)

var (
	backendsMu sync.Mutex
	backends   = map[string]Backend{}
	opened     = map[string]Storage{}
)

// RegisterBackend makes URLs with one of schemes (without "://") open
// through open; a backend package registers itself when it is linked in.
func RegisterBackend(open Backend, schemes ...string) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	for _, s := range schemes {
		backends[s] = open
	}
}

// IsURL says whether where names a networked queue rather than a file.
func IsURL(where string) bool {
	scheme, _, ok := strings.Cut(where, "://")
	return ok && scheme != "" && !strings.ContainsAny(scheme, "/.")
}

// storage is the queue env's operations use: env.Queue's backend, or the
// local store. A process opens each URL once and shares it (its pool, its
// listener) between calls.
func storage(ctx context.Context, env *op.Env) (Storage, error) {
	if env.QueueErr != nil {
		return nil, env.QueueErr
	}
	if env.Queue == "" {
		return boltStorage{env.Store}, nil
	}
	backendsMu.Lock()
	defer backendsMu.Unlock()
	if s, ok := opened[env.Queue]; ok {
		return s, nil
	}
	scheme, _, _ := strings.Cut(env.Queue, "://")
	open, ok := backends[scheme]
	if !ok {
		return nil, op.Errorf(op.KindInvalid, "no queue backend for %s:// URLs", scheme).
			WithHint("use a postgres:// URL, or a file path for the local store")
	}
	s, err := open(ctx, env.Queue)
	if err != nil {
		return nil, err
	}
	opened[env.Queue] = s
	return s, nil
}

// Changes returns a channel signalled after any process changes the queue
// env names (see [Storage.Watch]).
func Changes(ctx context.Context, env *op.Env) (<-chan struct{}, func(), error) {
	s, err := storage(ctx, env)
	if err != nil {
		return nil, nil, err
	}
	return s.Watch()
}

// Identity names the queue env uses; event ids continue only within one.
func Identity(ctx context.Context, env *op.Env) string {
	s, err := storage(ctx, env)
	if err != nil {
		return ""
	}
	return s.Identity()
}

// errConflict reports a change that lost to another process's, with what
// the instruction is now.
func errConflict(t *tx, id, verb string) error {
	now, ok := t.Get(id)
	if !ok {
		return op.Errorf(op.KindConflict, "instruction %s was deleted by another process while it was being %s", id, verb)
	}
	b, _ := json.Marshal(now.instruction(t.Position(now.Order)))
	return op.Errorf(op.KindConflict, "instruction %s was changed by another process while it was being %s; it is now %s", id, verb, b).
		WithHint("read it again (lm queue show %s) and repeat the change if it still applies", id)
}

// conflictOr turns ErrConflict into errConflict, leaving other errors alone.
func conflictOr(t *tx, err error, id, verb string) error {
	if errors.Is(err, ErrConflict) {
		return errConflict(t, id, verb)
	}
	return err
}
