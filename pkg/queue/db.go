package queue

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/op"
)

var (
	bItems    = []byte("queue.items")    // id -> record
	bPending  = []byte("queue.pending")  // order (uint64 BE) -> id
	bConsumed = []byte("queue.consumed") // consumed_at (unix ns BE) + id -> id
	bMeta     = []byte("queue.meta")     // counters and settings
	bAgents   = []byte("queue.agents")   // agent id -> Agent
	bEvents   = []byte("queue.events")   // seq (uint64 BE) -> Event

	kPending  = []byte("pending_count")
	kConsumed = []byte("consumed_count")
	kSettings = []byte("settings")
)

// orderStep spaces the sort keys of appended instructions.
const orderStep = 1 << 20

// tx wraps a bbolt transaction with the queue's bucket operations. In a
// read-only transaction missing buckets read as empty.
type tx struct {
	*bolt.Tx
	now time.Time
	// seed are the settings of a store that has none stored yet.
	seed Settings
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
	b := t.bucket(bMeta)
	if b == nil {
		return 0
	}
	if v := b.Get(key); len(v) == 8 {
		return int(binary.BigEndian.Uint64(v))
	}
	return 0
}

func (t *tx) addCounter(key []byte, delta int) error {
	return t.bucket(bMeta).Put(key, u64(uint64(t.counter(key)+delta)))
}

func (t *tx) settings() Settings {
	s := t.seed
	if b := t.bucket(bMeta); b != nil {
		if v := b.Get(kSettings); v != nil {
			json.Unmarshal(v, &s)
		}
	}
	return s
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
	var r record
	b := t.bucket(bItems)
	if b == nil {
		return r, false
	}
	v := b.Get([]byte(id))
	if v == nil {
		return r, false
	}
	if err := json.Unmarshal(v, &r); err != nil {
		panic(fmt.Sprintf("queue: corrupt record %s: %v", id, err))
	}
	return r, true
}

func (t *tx) put(r record) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return t.bucket(bItems).Put([]byte(r.ID), v)
}

// resolve finds the instruction an id names (case-insensitively, as ULIDs
// are). A unique prefix also names one when prefixes is set: a convenience
// for a person typing on the command line, never for a program, which
// could act on an instruction it did not mean.
func (t *tx) resolve(id string, prefixes bool) (record, error) {
	prefix := strings.ToUpper(strings.TrimSpace(id))
	if prefix == "" {
		return record{}, op.Errorf(op.KindInvalid, "an instruction id is required")
	}
	if r, ok := t.get(prefix); ok {
		return r, nil
	}
	if !prefixes {
		return record{}, op.Errorf(op.KindNotFound, "no instruction with id %q", id).
			WithHint("give the whole id, as queue_list (GET /api/instructions) shows it; prefixes are for lm's command line")
	}
	var matches []string
	if b := t.bucket(bItems); b != nil {
		c := b.Cursor()
		for k, _ := c.Seek([]byte(prefix)); k != nil && bytes.HasPrefix(k, []byte(prefix)) && len(matches) < 5; k, _ = c.Next() {
			matches = append(matches, string(k))
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
		return record{}, op.Errorf(op.KindInvalid, "id prefix %q is ambiguous: it matches %s", id, strings.Join(matches, ", ")).
			WithHint("give more characters of the id")
	}
}

// position is the 1-based rank of a pending instruction.
func (t *tx) position(order uint64) int {
	b := t.bucket(bPending)
	if b == nil {
		return 0
	}
	n := 0
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
		if binary.BigEndian.Uint64(k) == order {
			return n
		}
	}
	return 0
}

func (t *tx) lastOrder() uint64 {
	b := t.bucket(bPending)
	if b == nil {
		return 0
	}
	k, _ := b.Cursor().Last()
	if k == nil {
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
	b := t.bucket(bPending)
	if b == nil {
		return out
	}
	c := b.Cursor()
	pos := 0
	for k, id := c.First(); k != nil && (limit == 0 || len(out) < limit); k, id = c.Next() {
		pos++
		r, ok := t.get(string(id))
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
	b := t.bucket(bConsumed)
	if b == nil {
		return out
	}
	c := b.Cursor()
	if limit > 0 {
		// Walk back from the newest, then restore chronological order.
		for k, id := c.Last(); k != nil && len(out) < limit; k, id = c.Prev() {
			if r, ok := t.get(string(id)); ok {
				out = append(out, r.instruction(0))
			}
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	}
	for k, id := c.First(); k != nil; k, id = c.Next() {
		if r, ok := t.get(string(id)); ok {
			out = append(out, r.instruction(0))
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
	var a Agent
	b := t.bucket(bAgents)
	if b == nil {
		return a, false
	}
	v := b.Get([]byte(id))
	if v == nil {
		return a, false
	}
	json.Unmarshal(v, &a)
	return a, true
}

func (t *tx) putAgent(a Agent) error {
	a.Waiting, a.Connected = false, false // derived on read
	v, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return t.bucket(bAgents).Put([]byte(a.AgentID), v)
}

// agents returns every agent, most recently seen first, with the derived
// waiting and connected flags.
func (t *tx) agents(now time.Time, staleAfter int) []Agent {
	out := []Agent{}
	b := t.bucket(bAgents)
	if b == nil {
		return out
	}
	b.ForEach(func(_, v []byte) error {
		var a Agent
		if json.Unmarshal(v, &a) == nil {
			out = append(out, a.derive(now, staleAfter))
		}
		return nil
	})
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
	b := t.bucket(bPending)
	if b == nil {
		return record{}, false
	}
	_, id := b.Cursor().First()
	if id == nil {
		return record{}, false
	}
	return t.get(string(id))
}
