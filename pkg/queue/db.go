package queue

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/store"
)

// The queue's buckets. Every read decodes through their declarations, so a
// damaged record fails the transaction with the bucket and key named.
var (
	itemsBucket    = store.JSON("queue.items", store.AnyKey, Record.check)             // id -> record
	pendingBucket  = store.Text("queue.pending", store.Uint64Key)                      // order (uint64 BE) -> id
	consumedBucket = store.Text("queue.consumed", store.PrefixedUint64Key)             // consumed_at (unix ns BE) + id -> id
	metaBucket     = store.Declare("queue.meta", store.AnyKey, decodeMeta, encodeMeta) // counters and settings
	agentsBucket   = store.JSON[Agent]("queue.agents", store.AnyKey, nil)              // agent id -> Agent
	eventsBucket   = store.JSON[Event]("queue.events", store.Uint64Key, nil)           // seq (uint64 BE) -> Event

	bItems    = itemsBucket.Name()
	bPending  = pendingBucket.Name()
	bConsumed = consumedBucket.Name()
	bMeta     = metaBucket.Name()
	bAgents   = agentsBucket.Name()
	bEvents   = eventsBucket.Name()

	kPending  = []byte("pending_count")
	kConsumed = []byte("consumed_count")
	kSettings = []byte("settings")
)

// meta is one queue.meta record as stored, and the settings decoded from
// it when it holds them.
type meta struct {
	raw      []byte
	settings Settings
}

// decodeMeta reads a queue.meta value by its key: the counters are 8-byte
// numbers, the settings a JSON object (a setting it lacks, written before
// the setting existed, has its default).
func decodeMeta(k, v []byte) (meta, error) {
	m := meta{raw: v}
	switch string(k) {
	case string(kPending), string(kConsumed):
		if len(v) != 8 {
			return meta{}, fmt.Errorf("counter is %d bytes, not 8", len(v))
		}
	case string(kSettings):
		m.settings = DefaultSettings()
		if err := json.Unmarshal(v, &m.settings); err != nil {
			return meta{}, err
		}
	}
	return m, nil
}

func encodeMeta(m meta) ([]byte, error) { return m.raw, nil }

// OrderStep spaces the sort keys of appended instructions.
const OrderStep = 1 << 20

// boltStorage keeps the queue in the local bbolt store.
type boltStorage struct{ *store.Store }

var (
	_ Storage = boltStorage{}
	_ Tx      = (*boltTx)(nil)
)

// Update shares its commit with the queue's other writes in this process
// (see store.Batch), so fn may run more than once: the operations set their
// results rather than appending to them.
func (s boltStorage) Update(ctx context.Context, fn func(Tx) error) error {
	return s.Store.Batch(ctx, func(b *bolt.Tx) error {
		t := &boltTx{Tx: b}
		if err := fn(t); err != nil {
			return err
		}
		return t.trimEvents()
	})
}

// AfterWrites has fn run last in every transaction this process's writes
// to the store share (see store.AfterWrites), and done told how each ended:
// store.ErrRolledBack when what fn wrote was not stored for the others'
// sake.
func (s boltStorage) AfterWrites(fn func(Tx) error, done func(error)) {
	s.Store.AfterWrites(func(b *bolt.Tx) error {
		t := &boltTx{Tx: b}
		if err := fn(t); err != nil {
			return err
		}
		return t.trimEvents()
	}, done)
}

func (s boltStorage) View(ctx context.Context, fn func(Tx) error) error {
	return s.Store.View(ctx, func(b *bolt.Tx) error { return fn(&boltTx{Tx: b}) })
}

// boltTx wraps a bbolt transaction with the queue's bucket operations. In a
// read-only transaction missing buckets read as empty.
//
// Readers return zero values after meeting a damaged record and remember the
// first such error in err (see [Tx]).
type boltTx struct {
	*bolt.Tx
	err error
}

func (t *boltTx) Err() error { return t.err }

// fail remembers the first damaged record met.
func (t *boltTx) fail(err error) {
	if t.err == nil {
		t.err = err
	}
}

func (t *boltTx) bucket(name []byte) *bolt.Bucket {
	if b := t.Bucket(name); b != nil || !t.Writable() {
		return b
	}
	b, err := t.CreateBucket(name)
	if err != nil {
		panic(fmt.Sprintf("queue: create bucket %s: %v", name, err))
	}
	return b
}

func u64(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

func (t *boltTx) counter(key []byte) int {
	v, ok, err := metaBucket.Get(t.Tx, key)
	if err != nil {
		t.fail(err)
	}
	if !ok {
		return 0
	}
	return int(binary.BigEndian.Uint64(v.raw))
}

func (t *boltTx) addCounter(key []byte, delta int) error {
	return t.bucket(bMeta).Put(key, u64(uint64(t.counter(key)+delta)))
}

func (t *boltTx) Counts() (pending, consumed int) {
	return t.counter(kPending), t.counter(kConsumed)
}

// Settings are decoded, with defaults for settings stored before they
// existed, by the record layer that checks them.
func (t *boltTx) Settings() (Settings, bool) {
	m, ok, err := metaBucket.Get(t.Tx, kSettings)
	if err != nil {
		t.fail(err)
	}
	return m.settings, ok && err == nil
}

func (t *boltTx) PutSettings(s Settings) error {
	v, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return t.bucket(bMeta).Put(kSettings, v)
}

func (t *boltTx) Get(id string) (Record, bool) {
	r, ok, err := itemsBucket.Get(t.Tx, []byte(id))
	if err != nil {
		t.fail(err)
	}
	return r, ok
}

func (t *boltTx) put(r Record) error {
	return itemsBucket.Put(t.Tx, []byte(r.ID), r)
}

func (t *boltTx) Match(s string, tail bool, max int) []string {
	var matches []string
	b := itemsBucket.Of(t.Tx)
	if b == nil {
		return matches
	}
	c := b.Cursor()
	if !tail {
		for k, _ := c.Seek([]byte(s)); k != nil && bytes.HasPrefix(k, []byte(s)) && len(matches) < max; k, _ = c.Next() {
			matches = append(matches, string(k))
		}
		return matches
	}
	for k, _ := c.First(); k != nil && len(matches) < max; k, _ = c.Next() {
		if bytes.HasSuffix(k, []byte(s)) {
			matches = append(matches, string(k))
		}
	}
	return matches
}

// resolve finds the instruction an id names (case-insensitively, as ULIDs
// are). When forPerson is set — lm's command line — a unique prefix, a
// pending position or a unique tail (what tables show, "…M1N2", for ids
// made in one burst, which share most of their characters) also names one:
// conveniences for a person typing, never for a program, which could act on
// an instruction it did not mean.
func (t *tx) resolve(id string, forPerson bool) (Record, error) {
	prefix := strings.ToUpper(strings.TrimSpace(id))
	if prefix == "" {
		return Record{}, op.Errorf(op.KindInvalid, "an instruction id is required")
	}
	if r, ok := t.Get(prefix); ok {
		return r, nil
	}
	if !forPerson {
		return Record{}, op.Errorf(op.KindNotFound, "no instruction with id %q", id).
			WithHint("give the whole id, as queue_list (GET /api/instructions) shows it; prefixes and positions are for lm's command line")
	}
	tail, tailOnly := cutTailMark(prefix)
	if n, ok := queuePosition(prefix); ok {
		pending := t.Pending(n)
		if len(pending) < n {
			return Record{}, op.Errorf(op.KindNotFound, "no pending instruction at position %d (%d pending)", n, len(pending)).
				WithHint("positions are the # column of lm queue list")
		}
		return pending[n-1], nil
	}
	var matches []string
	by := "prefix"
	if !tailOnly {
		matches = t.Match(prefix, false, 5)
	}
	if len(matches) == 0 {
		by = "tail"
		matches = t.Match(tail, true, 5)
	}
	switch len(matches) {
	case 0:
		return Record{}, op.Errorf(op.KindNotFound, "no instruction with id %q", id).
			WithHint("list ids with: lm queue list --status all")
	case 1:
		r, _ := t.Get(matches[0])
		return r, nil
	default:
		return Record{}, op.Errorf(op.KindInvalid, "id %s %q is ambiguous: it matches %s", by, id, strings.Join(matches, ", ")).
			WithHint("give more characters of the id")
	}
}

// cutTailMark removes the mark tables put before an id's tail ("…" or
// "..."), and says whether there was one.
func cutTailMark(id string) (string, bool) {
	for _, mark := range []string{"…", "..."} {
		if tail, ok := strings.CutPrefix(id, mark); ok {
			return tail, true
		}
	}
	return id, false
}

// queuePosition reads a place in the queue where an id is expected (lm
// queue move 3 --to 1): a whole number that does not start with 0. It
// cannot be an id prefix, since ids start with 0 (ULIDs until the year
// 10889).
func queuePosition(s string) (int, bool) {
	if s == "" || s[0] < '1' || s[0] > '9' || len(s) > 9 {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func (t *boltTx) Position(order uint64) int {
	b := pendingBucket.Of(t.Tx)
	if b == nil {
		return 0
	}
	n := 0
	c := b.Cursor()
	for k, id := c.First(); k != nil; k, id = c.Next() {
		if _, err := pendingBucket.Decode(k, id); err != nil {
			t.fail(err)
			return 0
		}
		n++
		if binary.BigEndian.Uint64(k) == order {
			return n
		}
	}
	return 0
}

// LastOrder needs no lock: bbolt has one writer at a time.
func (t *boltTx) LastOrder() uint64 {
	b := pendingBucket.Of(t.Tx)
	if b == nil {
		return 0
	}
	k, id := store.Last(b.Cursor())
	if k == nil {
		return 0
	}
	if _, err := pendingBucket.Decode(k, id); err != nil {
		t.fail(err)
		return 0
	}
	return binary.BigEndian.Uint64(k)
}

// Insert counts what it adds once for the whole batch: a counter written
// per instruction was 5% of a large add.
func (t *boltTx) Insert(rs []Record) error {
	for _, r := range rs {
		if err := t.put(r); err != nil {
			return err
		}
		if err := t.bucket(bPending).Put(u64(r.Order), []byte(r.ID)); err != nil {
			return err
		}
	}
	return t.addCounter(kPending, len(rs))
}

// current reads the stored instruction r replaces, checking its version.
func (t *boltTx) current(r Record) (Record, error) {
	old, ok := t.Get(r.ID)
	if t.err != nil {
		return old, t.err
	}
	if !ok || old.Version != r.Version {
		return old, ErrConflict
	}
	return old, nil
}

func (t *boltTx) Replace(r Record) error {
	old, err := t.current(r)
	if err != nil {
		return err
	}
	if err := t.unindex(old); err != nil {
		return err
	}
	r.Version++
	if err := t.put(r); err != nil {
		return err
	}
	if r.Status == StatusPending {
		if err := t.bucket(bPending).Put(u64(r.Order), []byte(r.ID)); err != nil {
			return err
		}
		return t.addCounter(kPending, 1)
	}
	if err := t.bucket(bConsumed).Put(consumedKey(r), []byte(r.ID)); err != nil {
		return err
	}
	return t.addCounter(kConsumed, 1)
}

func consumedKey(r Record) []byte {
	return append(u64(uint64(r.ConsumedAt.UnixNano())), r.ID...)
}

func (t *boltTx) Acknowledge(id string) error {
	r, ok := t.Get(id)
	if !ok || !r.Unacknowledged {
		return nil
	}
	r.Unacknowledged, r.Consumer = false, nil
	return t.Replace(r)
}

func (t *boltTx) Remove(r Record) error {
	old, err := t.current(r)
	if err != nil {
		return err
	}
	if err := t.bucket(bItems).Delete([]byte(r.ID)); err != nil {
		return err
	}
	return t.unindex(old)
}

// unindex takes a stored instruction out of its status's index and count.
func (t *boltTx) unindex(r Record) error {
	if r.Status == StatusPending {
		if err := t.bucket(bPending).Delete(u64(r.Order)); err != nil {
			return err
		}
		return t.addCounter(kPending, -1)
	}
	if err := t.bucket(bConsumed).Delete(consumedKey(r)); err != nil {
		return err
	}
	return t.addCounter(kConsumed, -1)
}

func (t *boltTx) Pending(limit int) []Record {
	var out []Record
	b := pendingBucket.Of(t.Tx)
	if b == nil {
		return out
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil && (limit == 0 || len(out) < limit); k, v = c.Next() {
		id, err := pendingBucket.Decode(k, v)
		if err != nil {
			t.fail(err)
			return nil
		}
		if r, ok := t.Get(id); ok {
			out = append(out, r)
		}
	}
	return out
}

func (t *boltTx) Consumed(limit int) []Record {
	var out []Record
	b := consumedBucket.Of(t.Tx)
	if b == nil {
		return out
	}
	c := b.Cursor()
	take := func(k, v []byte) bool {
		id, err := consumedBucket.Decode(k, v)
		if err != nil {
			t.fail(err)
			return false
		}
		if r, ok := t.Get(id); ok {
			out = append(out, r)
		}
		return true
	}
	if limit > 0 {
		// Walk back from the newest, then restore chronological order.
		for k, v := store.Last(c); k != nil && len(out) < limit; k, v = c.Prev() {
			if !take(k, v) {
				return nil
			}
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	}
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if !take(k, v) {
			return nil
		}
	}
	return out
}

// Reorder rewrites the pending sort keys in the given id order. Nothing
// can change the order between the caller's read and this, as bbolt has one
// writer at a time.
func (t *boltTx) Reorder(_, ids []string) error {
	b := t.bucket(bPending)
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	for i, id := range ids {
		r, _ := t.Get(id)
		r.Order = uint64(i+1) * OrderStep
		if err := t.put(r); err != nil {
			return err
		}
		if err := b.Put(u64(r.Order), []byte(id)); err != nil {
			return err
		}
	}
	return nil
}

func (t *boltTx) Agent(id string) (Agent, bool) {
	a, ok, err := agentsBucket.Get(t.Tx, []byte(id))
	if err != nil {
		t.fail(err)
	}
	return a, ok
}

func (t *boltTx) PutAgent(a Agent) error {
	a.Waiting, a.Connected = false, false // derived on read
	return agentsBucket.Put(t.Tx, []byte(a.AgentID), a)
}

func (t *boltTx) Agents() []Agent {
	out := []Agent{}
	if err := agentsBucket.ForEach(t.Tx, func(_ []byte, a Agent) error {
		out = append(out, a)
		return nil
	}); err != nil {
		t.fail(err)
	}
	return out
}

// Claim needs no reservation: bbolt has one writer at a time.
func (t *boltTx) Claim(n int) []Record {
	b := pendingBucket.Of(t.Tx)
	if b == nil {
		return nil
	}
	var out []Record
	c := b.Cursor()
	for k, v := c.First(); k != nil && len(out) < n; k, v = c.Next() {
		id, err := pendingBucket.Decode(k, v)
		if err != nil {
			t.fail(err)
			return nil
		}
		r, ok := t.Get(id)
		if !ok {
			return out
		}
		out = append(out, r)
	}
	return out
}
