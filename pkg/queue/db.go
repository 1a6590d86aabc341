package queue

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/store"
)

// The queue's buckets. Every read decodes through their declarations, so a
// damaged record fails the transaction with the bucket and key named.
var (
	itemsBucket    = store.JSON("queue.items", store.AnyKey, record.check)             // id -> record
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
		m.settings = defaultSettings()
		if err := json.Unmarshal(v, &m.settings); err != nil {
			return meta{}, err
		}
	}
	return m, nil
}

func encodeMeta(m meta) ([]byte, error) { return m.raw, nil }

// orderStep spaces the sort keys of appended instructions.
const orderStep = 1 << 20

// tx wraps a bbolt transaction with the queue's bucket operations. In a
// read-only transaction missing buckets read as empty.
//
// Readers return zero values after meeting a damaged record and remember the
// first such error in err; update and view return it in place of whatever
// the function made of the zero values, so nothing built on them is
// committed or shown.
type tx struct {
	*bolt.Tx
	now time.Time
	// seed are the settings of a store that has none stored yet.
	seed Settings
	err  error
}

// fail remembers the first damaged record met.
func (t *tx) fail(err error) {
	if t.err == nil {
		t.err = err
	}
}

func (t *tx) bucket(name []byte) *bolt.Bucket {
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

func (t *tx) counter(key []byte) int {
	v, ok, err := metaBucket.Get(t.Tx, key)
	if err != nil {
		t.fail(err)
	}
	if !ok {
		return 0
	}
	return int(binary.BigEndian.Uint64(v.raw))
}

func (t *tx) addCounter(key []byte, delta int) error {
	return t.bucket(bMeta).Put(key, u64(uint64(t.counter(key)+delta)))
}

func (t *tx) settings() Settings {
	m, ok, err := metaBucket.Get(t.Tx, kSettings)
	if err != nil {
		t.fail(err)
	}
	if !ok {
		return t.seed
	}
	return m.settings
}

func (t *tx) hasSettings() bool {
	b := t.bucket(bMeta)
	return b != nil && b.Get(kSettings) != nil
}

func (t *tx) putSettings(s Settings) error {
	v, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return t.bucket(bMeta).Put(kSettings, v)
}

func (t *tx) get(id string) (record, bool) {
	r, ok, err := itemsBucket.Get(t.Tx, []byte(id))
	if err != nil {
		t.fail(err)
	}
	return r, ok
}

func (t *tx) put(r record) error {
	return itemsBucket.Put(t.Tx, []byte(r.ID), r)
}

// resolve finds the instruction an id names (case-insensitively, as ULIDs
// are). When forPerson is set — lm's command line — a unique prefix, a
// pending position or a unique tail (what tables show, "…M1N2", for ids
// made in one burst, which share most of their characters) also names one:
// conveniences for a person typing, never for a program, which could act on
// an instruction it did not mean.
func (t *tx) resolve(id string, forPerson bool) (record, error) {
	prefix := strings.ToUpper(strings.TrimSpace(id))
	if prefix == "" {
		return record{}, op.Errorf(op.KindInvalid, "an instruction id is required")
	}
	if r, ok := t.get(prefix); ok {
		return r, nil
	}
	if !forPerson {
		return record{}, op.Errorf(op.KindNotFound, "no instruction with id %q", id).
			WithHint("give the whole id, as queue_list (GET /api/instructions) shows it; prefixes and positions are for lm's command line")
	}
	tail, tailOnly := cutTailMark(prefix)
	if n, ok := queuePosition(prefix); ok {
		pending := t.pending(n)
		if len(pending) < n {
			return record{}, op.Errorf(op.KindNotFound, "no pending instruction at position %d (%d pending)", n, len(pending)).
				WithHint("positions are the # column of lm queue list")
		}
		r, _ := t.get(pending[n-1].ID)
		return r, nil
	}
	var matches []string
	by := "prefix"
	if b := itemsBucket.Of(t.Tx); b != nil && !tailOnly {
		c := b.Cursor()
		for k, _ := c.Seek([]byte(prefix)); k != nil && bytes.HasPrefix(k, []byte(prefix)) && len(matches) < 5; k, _ = c.Next() {
			matches = append(matches, string(k))
		}
	}
	if b := itemsBucket.Of(t.Tx); b != nil && len(matches) == 0 {
		by = "tail"
		c := b.Cursor()
		for k, _ := c.First(); k != nil && len(matches) < 5; k, _ = c.Next() {
			if bytes.HasSuffix(k, []byte(tail)) {
				matches = append(matches, string(k))
			}
		}
	}
	switch len(matches) {
	case 0:
		return record{}, op.Errorf(op.KindNotFound, "no instruction with id %q", id).
			WithHint("list ids with: lm queue list --status all")
	case 1:
		r, _ := t.get(matches[0])
		return r, nil
	default:
		return record{}, op.Errorf(op.KindInvalid, "id %s %q is ambiguous: it matches %s", by, id, strings.Join(matches, ", ")).
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

// position is the 1-based rank of a pending instruction.
func (t *tx) position(order uint64) int {
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

func (t *tx) lastOrder() uint64 {
	b := pendingBucket.Of(t.Tx)
	if b == nil {
		return 0
	}
	k, id := b.Cursor().Last()
	if k == nil {
		return 0
	}
	if _, err := pendingBucket.Decode(k, id); err != nil {
		t.fail(err)
		return 0
	}
	return binary.BigEndian.Uint64(k)
}

// add appends a pending instruction. The caller counts what it adds, once
// for a whole batch: a counter written per instruction was 5% of a large
// add.
func (t *tx) add(content string, order uint64) (record, error) {
	r := record{
		ID:        ulid.MustNew(ulid.Timestamp(t.now), ulid.DefaultEntropy()).String(),
		Content:   content,
		Status:    StatusPending,
		CreatedAt: t.now,
		UpdatedAt: t.now,
		Order:     order,
	}
	if err := t.put(r); err != nil {
		return r, err
	}
	return r, t.bucket(bPending).Put(u64(order), []byte(r.ID))
}

// consume marks a pending instruction consumed by agent.
func (t *tx) consume(r record, agent string) (record, error) {
	if err := t.bucket(bPending).Delete(u64(r.Order)); err != nil {
		return r, err
	}
	now := t.now
	r.Status = StatusConsumed
	r.ConsumedAt = &now
	r.ConsumedByAgentID = &agent
	r.UpdatedAt = now
	r.Unacknowledged, r.Consumer = true, self()
	if err := t.put(r); err != nil {
		return r, err
	}
	if err := t.bucket(bConsumed).Put(consumedKey(r), []byte(r.ID)); err != nil {
		return r, err
	}
	if err := t.addCounter(kPending, -1); err != nil {
		return r, err
	}
	return r, t.addCounter(kConsumed, 1)
}

func consumedKey(r record) []byte {
	return append(u64(uint64(r.ConsumedAt.UnixNano())), r.ID...)
}

// remove deletes an instruction and its index entries.
func (t *tx) remove(r record) error {
	if err := t.bucket(bItems).Delete([]byte(r.ID)); err != nil {
		return err
	}
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

// pending returns pending instructions in queue order; limit 0 means all.
func (t *tx) pending(limit int) []Instruction {
	var out []Instruction
	b := pendingBucket.Of(t.Tx)
	if b == nil {
		return out
	}
	c := b.Cursor()
	pos := 0
	for k, v := c.First(); k != nil && (limit == 0 || len(out) < limit); k, v = c.Next() {
		id, err := pendingBucket.Decode(k, v)
		if err != nil {
			t.fail(err)
			return nil
		}
		pos++
		r, ok := t.get(id)
		if !ok {
			continue
		}
		out = append(out, r.instruction(pos))
	}
	return out
}

// consumed returns consumed instructions, oldest consumed first; with limit
// > 0 only the most recent limit of them.
func (t *tx) consumed(limit int) []Instruction {
	var out []Instruction
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
		if r, ok := t.get(id); ok {
			out = append(out, r.instruction(0))
		}
		return true
	}
	if limit > 0 {
		// Walk back from the newest, then restore chronological order.
		for k, v := c.Last(); k != nil && len(out) < limit; k, v = c.Prev() {
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

// renumber rewrites the pending sort keys in the given id order.
func (t *tx) renumber(ids []string) error {
	b := t.bucket(bPending)
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	for i, id := range ids {
		r, _ := t.get(id)
		r.Order = uint64(i+1) * orderStep
		if err := t.put(r); err != nil {
			return err
		}
		if err := b.Put(u64(r.Order), []byte(id)); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) agent(id string) (Agent, bool) {
	a, ok, err := agentsBucket.Get(t.Tx, []byte(id))
	if err != nil {
		t.fail(err)
	}
	return a, ok
}

func (t *tx) putAgent(a Agent) error {
	a.Waiting, a.Connected = false, false // derived on read
	return agentsBucket.Put(t.Tx, []byte(a.AgentID), a)
}

// agents returns every agent, most recently seen first, with the derived
// waiting and connected flags.
func (t *tx) agents(now time.Time, staleAfter int) []Agent {
	out := []Agent{}
	if err := agentsBucket.ForEach(t.Tx, func(_ []byte, a Agent) error {
		out = append(out, a.derive(now, staleAfter))
		return nil
	}); err != nil {
		t.fail(err)
	}
	sortAgents(out)
	return out
}

// derive fills the flags that depend on the time of reading.
func (a Agent) derive(now time.Time, staleAfter int) Agent {
	a.Waiting = a.WaitingUntil != nil && now.Before(*a.WaitingUntil)
	a.Connected = a.Waiting || now.Sub(a.LastSeenAt) <= time.Duration(staleAfter)*time.Second
	return a
}

// emitAgent records a status.changed event with the agent as it stands now.
func (t *tx) emitAgent(a Agent) error {
	return t.emit(EventStatusChanged, a.derive(t.now, t.settings().AgentStaleAfterSeconds))
}

// oldestPending is the head of the queue.
func (t *tx) oldestPending() (record, bool) {
	b := pendingBucket.Of(t.Tx)
	if b == nil {
		return record{}, false
	}
	k, v := b.Cursor().First()
	if k == nil {
		return record{}, false
	}
	id, err := pendingBucket.Decode(k, v)
	if err != nil {
		t.fail(err)
		return record{}, false
	}
	return t.get(id)
}
