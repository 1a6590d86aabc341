package queue

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"
)

// Event types, as spec 000's /api/events names them.
const (
	EventCreated       = "instruction.created"
	EventUpdated       = "instruction.updated"
	EventDeleted       = "instruction.deleted"
	EventConsumed      = "instruction.consumed"
	EventStatusChanged = "status.changed"
	EventConfigUpdated = "config.updated"
)

// EventRetention is how many events the store keeps for replay (watch
// --since, SSE Last-Event-ID); older ones are dropped as new ones arrive,
// a TrimBatch at a time, so most commits leave the oldest page alone.
const (
	EventRetention = 10000
	TrimBatch      = 1000
)

// Event is one change to the queue, recorded in the same transaction as the
// change so every process sees the same ordered history.
type Event struct {
	ID        uint64          `json:"id" jsonschema:"sequence number; resume after it with --since"`
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data" jsonschema:"the full item: an instruction, an agent, the settings, or {id} for a deletion"`
}

func (t *boltTx) Emit(typ string, at time.Time, raw json.RawMessage) error {
	b := t.bucket(bEvents)
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	// The event is assembled around the already-encoded data rather than
	// marshalled again: batches of adds emit one event per instruction.
	v := make([]byte, 0, len(raw)+96)
	v = fmt.Appendf(v, `{"id":%d,"type":%q,"timestamp":"`, seq, typ)
	v = at.AppendFormat(v, time.RFC3339Nano)
	v = append(append(append(v, `","data":`...), raw...), '}')
	return b.Put(u64(seq), v)
}

// SkipEvents advances the event sequence by n without recording events:
// a batch larger than the retention window would only write events to trim
// them again. Readers resuming from before the gap see events were lost.
func (t *boltTx) SkipEvents(n int) error {
	if n <= 0 {
		return nil
	}
	b := t.bucket(bEvents)
	return b.SetSequence(b.Sequence() + uint64(n))
}

// trimEvents drops the events older than the retention window, once per
// transaction: trimming one at a time made every append re-walk the
// deleted keys at the head of the bucket.
func (t *boltTx) trimEvents() error {
	b := t.Bucket(bEvents)
	if b == nil || b.Sequence() <= EventRetention {
		return nil
	}
	oldest := b.Sequence() - EventRetention
	c := b.Cursor()
	first, _ := c.First()
	if first == nil {
		return nil
	}
	if err := eventsBucket.CheckKey(first); err != nil {
		return err
	}
	if binary.BigEndian.Uint64(first)+TrimBatch > oldest {
		return nil // not a whole batch beyond the window yet
	}
	// Deleted by key alone: an event on its way out is never read.
	var stale [][]byte
	for k := first; k != nil; k, _ = c.Next() {
		if err := eventsBucket.CheckKey(k); err != nil {
			return err
		}
		if binary.BigEndian.Uint64(k) > oldest {
			break
		}
		stale = append(stale, k)
	}
	for _, k := range stale {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// EventsSince returns the events after seq, oldest first, at most limit
// (0: no limit).
func (t *boltTx) EventsSince(seq uint64, limit int) []Event {
	var out []Event
	b := eventsBucket.Of(t.Tx)
	if b == nil {
		return out
	}
	c := b.Cursor()
	for k, v := c.Seek(u64(seq + 1)); k != nil && (limit == 0 || len(out) < limit); k, v = c.Next() {
		e, err := eventsBucket.Decode(k, v)
		if err != nil {
			t.fail(err)
			return nil
		}
		out = append(out, e)
	}
	return out
}

// LastEvent is the sequence number of the newest event, 0 for none.
func (t *boltTx) LastEvent() uint64 {
	b := t.bucket(bEvents)
	if b == nil {
		return 0
	}
	return b.Sequence()
}

func instructionDeleted(id string) map[string]string { return map[string]string{"id": id} }
