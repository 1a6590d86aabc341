package pgstore

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"lmtool.dev/lm/pkg/queue"
)

// Every transaction reads the settings before anything else (see queue's
// newTx), and a claim needs them before it claims, to know how long a call
// that finds nothing waits. A round trip of their own before each claim
// was a third of a claim's; instead a write transaction takes the settings
// this process read last and confirms them in front of the statement it
// sends next, in the same round trip. Another gateway may have changed
// them meanwhile: a transaction that finds them changed runs again (see
// Storage.Update) reading them afresh, so nothing it did with the old
// ones commits. A read (Storage.View) always reads them: it is not run
// again.

// knownSettings are the settings this process last read from the database.
type knownSettings struct {
	raw      []byte // as the database returned them: compared byte for byte
	settings queue.Settings
}

// errStaleSettings says the settings a transaction took from this
// process's last read were changed by another transaction.
var errStaleSettings = errors.New("the queue's settings changed since this process read them")

// readSettings reads the settings and the stored counts together.
const readSettings = "SELECT (SELECT settings FROM lm_queue_settings), " + sumCounts

// parseSettings reads stored settings; one stored before a setting existed
// has its default.
func parseSettings(raw []byte) (queue.Settings, error) {
	s := queue.DefaultSettings()
	err := json.Unmarshal(raw, &s)
	return s, err
}

// known returns the settings this process read last, or nil when it must
// read them: it has none, or runs a transaction again after a failure.
func (t *tx) known() *knownSettings {
	if t.s == nil || !t.cached {
		return nil
	}
	return t.s.known.Load()
}

// remember keeps settings read from the database for the transactions
// after; a queue without settings keeps nothing, since its first write
// stores them.
func (s *Storage) remember(raw []byte, settings queue.Settings) {
	if s == nil {
		return
	}
	if raw == nil {
		s.known.Store(nil)
		return
	}
	s.known.Store(&knownSettings{raw: raw, settings: settings})
}

// confirmation is the read that confirms the settings the transaction
// took unread, first in its next batch; it reads the stored counts with
// them, as the read it spares would have.
func (t *tx) confirmation() *pgx.QueuedQuery {
	want := t.unconfirmed
	t.unconfirmed = nil
	q := &pgx.QueuedQuery{SQL: readSettings}
	q.QueryRow(func(row pgx.Row) error {
		var (
			raw    []byte
			stored counted
		)
		if err := row.Scan(&raw, &stored.pending, &stored.consumed); err != nil {
			return err
		}
		t.stored = &stored
		if bytes.Equal(raw, want) {
			return nil
		}
		// The next attempt reads them again; the process's next
		// transactions take the ones found here.
		var settings queue.Settings
		if raw != nil {
			var err error
			if settings, err = parseSettings(raw); err != nil {
				return err
			}
		}
		t.s.remember(raw, settings)
		return errStaleSettings
	})
	return q
}
