// Package pgstore keeps the queue in a PostgreSQL database a team shares, so
// any number of gateways and CLIs on any machines serve one queue. Claims
// take the head of the queue with SELECT … FOR UPDATE SKIP LOCKED and mark it
// consumed in the same transaction; every commit that changed something
// sends a NOTIFY, which wakes waiters in every process. Nothing every commit
// writes sits in one row: events take their ids from their transaction's
// id, and readers read only the events of transactions older than any still
// running (see [tx.EventsSince]), so a reader resuming after an id misses
// none, however many writers commit at once.
//
// Linking the package registers it for postgres:// and postgresql:// URLs
// (see [queue.RegisterBackend]).
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/queue"
)

func init() {
	queue.RegisterBackend(func(ctx context.Context, url string) (queue.Storage, error) {
		return Open(ctx, url)
	}, "postgres", "postgresql")
}

// channel is the NOTIFY channel of queue changes.
const channel = "lm_queue"

var (
	_ queue.Storage = (*Storage)(nil)
	_ queue.Tx      = (*tx)(nil)
)

// Storage is a queue in PostgreSQL: a pool of connections and one listener.
type Storage struct {
	pool     *pgxpool.Pool
	shown    string // the URL with its password masked
	identity string
	hub      hub
	// known are the settings this process read last (see settings.go).
	known atomic.Pointer[knownSettings]
}

// Redact masks the password of a database URL, for every message and log:
// the one in its user information and those its parameters carry
// (password, and sslpassword, which unlocks the client's key).
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "a database URL that does not parse"
	}
	if q := u.Query(); q.Has("password") || q.Has("sslpassword") {
		for _, k := range []string{"password", "sslpassword"} {
			if q.Has(k) {
				q.Set(k, "xxxxx")
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// HasPassword says whether a URL carries its password itself: on a command
// line, where every process can read it, it must come from the environment
// (PGPASSWORD, ~/.pgpass) instead.
func HasPassword(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	_, ok := u.User.Password()
	return ok || u.Query().Has("password")
}

// WithPassword puts password into the URL raw, for a password that comes
// from lm's secrets rather than the environment.
func WithPassword(raw, password string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", op.Errorf(op.KindInvalid, "queue database URL %s is not valid", Redact(raw))
	}
	u.User = url.UserPassword(u.User.Username(), password)
	return u.String(), nil
}

// connect opens a pool without checking the schema.
func connect(ctx context.Context, raw string) (*pgxpool.Pool, string, error) {
	shown := Redact(raw)
	cfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		// pgx's message may quote the URL, password and all.
		return nil, shown, op.Errorf(op.KindInvalid, "queue database URL %s is not valid", shown).
			WithHint("write postgres://USER@HOST:PORT/DATABASE?sslmode=…, with the password in PGPASSWORD")
	}
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, shown, unavailable(shown, err)
	}
	return pool, shown, nil
}

// Open connects to the queue at raw and checks that its schema is the one
// this lm writes.
func Open(ctx context.Context, raw string) (*Storage, error) {
	pool, shown, err := connect(ctx, raw)
	if err != nil {
		return nil, err
	}
	s := &Storage{pool: pool, shown: shown}
	if err := s.checkSchema(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	s.hub.init(s)
	return s, nil
}

// Close releases the pool and stops the listener.
func (s *Storage) Close() {
	s.hub.stop()
	s.pool.Close()
}

func (s *Storage) Identity() string { return s.identity }

// Update runs fn in one READ COMMITTED transaction (see [tx] for how it
// spares round trips), and again, from the start, a few times when that
// may succeed: after a deadlock or serialization failure PostgreSQL
// reported, or settings another process changed (see settings.go), which
// an attempt after the first reads afresh. That is safe since fn only
// reads and writes through the transaction.
func (s *Storage) Update(ctx context.Context, fn func(queue.Tx) error) error {
	var err error
	for attempt := range 5 {
		err = s.run(ctx, &tx{ctx: ctx, s: s, write: true, cached: attempt == 0}, fn)
		if !retryable(err) {
			break
		}
	}
	return err
}

// View runs fn on reads that see what is committed as each starts. It
// reads the settings afresh: running it again, as a write may be, would
// not do for a caller that gathers what it reads across calls.
func (s *Storage) View(ctx context.Context, fn func(queue.Tx) error) error {
	return s.run(ctx, &tx{ctx: ctx, s: s}, fn)
}

func (s *Storage) run(ctx context.Context, t *tx, fn func(queue.Tx) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.fault(err)
	}
	// A connection left inside a transaction (a COMMIT that never came
	// back) is closed by the pool rather than reused.
	defer conn.Release()
	// A read runs without a transaction, and a write opens one only when
	// it must (see tx): at READ COMMITTED each statement sees what is
	// committed when it starts, inside one or not.
	t.conn = conn.Conn()
	err = fn(t)
	if err == nil {
		err = t.err
	}
	if err == nil && t.unconfirmed != nil {
		// fn sent nothing after taking the settings: what it did
		// stands once they are confirmed.
		err = t.pipeline()
	}
	if err == nil && t.write {
		err = t.commit()
	}
	if err == nil && t.putSettings {
		s.known.Store(nil)
	}
	if err != nil {
		t.rollback()
		if t.claimed {
			// Waiters that found the head reserved by this transaction
			// went to sleep; it is theirs again.
			s.pool.Exec(context.WithoutCancel(ctx), "SELECT pg_notify($1, '')", channel)
		}
		return s.fault(err)
	}
	return nil
}

// fault turns what the database or the network reported into the error
// lm reports: a database that cannot be reached is unavailable (exit 6),
// with the URL's password masked.
func (s *Storage) fault(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var oe *op.Error
	if errors.As(err, &oe) || errors.Is(err, queue.ErrConflict) || retryable(err) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && !connectionClass(pe.Code) {
		return fmt.Errorf("queue database %s: %s (SQLSTATE %s)", s.shown, pe.Message, pe.Code)
	}
	return unavailable(s.shown, err)
}

func unavailable(shown string, err error) error {
	msg := err.Error()
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		// Its text names user and database, never the password; the
		// cause alone says what went wrong.
		msg = errors.Unwrap(ce).Error()
	}
	// One cause a line, per attempt: sslmode=prefer tries with TLS and
	// without, and a refused connection is refused alike both times.
	var causes []string
	for _, line := range strings.Split(msg, "\n") {
		if !slices.Contains(causes, line) {
			causes = append(causes, line)
		}
	}
	msg = strings.Join(causes, "; ")
	return op.Errorf(op.KindUnavailable, "queue database %s is unavailable: %s", shown, msg).
		WithHint("check that PostgreSQL runs and the URL, PGPASSWORD and sslmode are right; lm store migrate creates the schema")
}

// connectionClass is a server error that means the connection, not the
// statement, failed: class 08, or the server shutting down or starting.
func connectionClass(code string) bool {
	return code[:2] == "08" || code == "57P01" || code == "57P02" || code == "57P03"
}

// retryable is a deadlock or serialization failure, or settings changed
// under the transaction: it may succeed when run again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.Is(err, errStaleSettings) || errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}
