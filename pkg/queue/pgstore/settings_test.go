package pgstore

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"lmtool.dev/lm/pkg/queue"
	"lmtool.dev/lm/pkg/queue/pgstore/pgtest"
)

// roundTrips counts the queries and batches, a round trip each, that a
// connection sends.
type roundTrips struct{ n int }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n++
	return ctx
}
func (*roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n++
	return ctx
}
func (*roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (*roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// tracedOpen opens the queue at a new, migrated database and a connection
// to it whose batches are counted.
func tracedOpen(t *testing.T) (*Storage, *pgx.Conn, *roundTrips) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.URL(t)
	if _, err := Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	counted := &roundTrips{}
	cfg.Tracer = counted
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return s, conn, counted
}

// A claim's settings, once the process has read them, go with the claim
// in one round trip instead of one of their own before it.
func TestClaimReadsKnownSettingsWithTheClaim(t *testing.T) {
	s, conn, sent := tracedOpen(t)
	ctx := context.Background()
	if err := s.Update(ctx, func(tx queue.Tx) error {
		now := time.Now()
		if err := tx.PutSettings(queue.DefaultSettings()); err != nil {
			return err
		}
		return tx.Insert([]queue.Record{{ID: "one", Content: "one", Status: queue.StatusPending, CreatedAt: now, UpdatedAt: now, Order: 1}})
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.View(ctx, func(tx queue.Tx) error { tx.Settings(); return tx.Err() }); err != nil {
		t.Fatal(err)
	}
	claim := &tx{ctx: ctx, s: s, conn: conn, write: true, cached: true}
	if _, ok := claim.Settings(); !ok {
		t.Fatal("the settings stored are not found")
	}
	claimed := claim.Claim(1)
	trips := sent.n
	claim.rollback()
	if len(claimed) != 1 || claim.err != nil || trips != 1 {
		t.Fatalf("settings and a claim of %d took %d round trips (%v), want 1", len(claimed), trips, claim.err)
	}
}

// Settings another gateway changes after this process read them are the
// ones a transaction here acts on: one that took the old ones runs again
// with the new, whether it sent a statement after them or not, and a read
// reads them afresh.
func TestSettingsChangedElsewhereAreTheOnesUsed(t *testing.T) {
	here, _, _ := tracedOpen(t)
	ctx := context.Background()
	elsewhere, err := Open(ctx, here.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer elsewhere.Close()
	put := func(s *Storage, wait int) {
		t.Helper()
		settings := queue.DefaultSettings()
		settings.DefaultWaitSeconds = wait
		if err := s.Update(ctx, func(tx queue.Tx) error { return tx.PutSettings(settings) }); err != nil {
			t.Fatal(err)
		}
	}
	put(here, 1)
	for _, tc := range []struct {
		name string
		run  func(func(queue.Tx) error) error
		more func(queue.Tx) // what the transaction does after reading the settings
	}{
		{"a read", func(fn func(queue.Tx) error) error { return here.View(ctx, fn) }, func(tx queue.Tx) { tx.Counts() }},
		{"a claim", func(fn func(queue.Tx) error) error { return here.Update(ctx, fn) }, func(tx queue.Tx) { tx.Claim(1) }},
		{"a write that reads nothing more", func(fn func(queue.Tx) error) error { return here.Update(ctx, fn) },
			func(tx queue.Tx) { tx.Acknowledge("none") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// This process reads the settings; another gateway
			// changes them.
			if err := here.View(ctx, func(tx queue.Tx) error { tx.Settings(); return tx.Err() }); err != nil {
				t.Fatal(err)
			}
			before := here.known.Load().settings
			put(elsewhere, before.DefaultWaitSeconds+1)
			var used []int
			err := tc.run(func(tx queue.Tx) error {
				s, _ := tx.Settings()
				used = append(used, s.DefaultWaitSeconds)
				tc.more(tx)
				return tx.Err()
			})
			if err != nil || used[len(used)-1] != before.DefaultWaitSeconds+1 {
				t.Fatalf("the transaction ran with waits %v (%v), last want %d", used, err, before.DefaultWaitSeconds+1)
			}
			if k := here.known.Load(); k == nil || k.settings.DefaultWaitSeconds != before.DefaultWaitSeconds+1 {
				t.Fatalf("the process goes on with %+v", k)
			}
		})
	}
}

// A transaction whose connection is gone before the settings it took are
// confirmed fails with the connection's error, counts and all: the counts
// the confirmation would have read are not there.
func TestConnectionLostBeforeTheConfirmationFails(t *testing.T) {
	ctx := context.Background()
	s, conn, _ := tracedOpen(t)
	if err := s.Update(ctx, func(tx queue.Tx) error { return tx.PutSettings(queue.DefaultSettings()) }); err != nil {
		t.Fatal(err)
	}
	if err := s.View(ctx, func(tx queue.Tx) error { tx.Settings(); return tx.Err() }); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	lost := &tx{ctx: ctx, s: s, conn: conn, write: true, cached: true}
	lost.Settings()
	lost.LastOrder()
	if pending, _ := lost.Counts(); pending != 0 || lost.Err() == nil {
		t.Fatalf("counts %d on a lost connection (%v), want 0 and its error", pending, lost.Err())
	}
}
