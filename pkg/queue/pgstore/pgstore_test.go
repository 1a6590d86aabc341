package pgstore_test

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/queue"
	"lmtool.dev/lm/pkg/queue/pgstore"
	"lmtool.dev/lm/pkg/queue/pgstore/pgtest"
	"lmtool.dev/lm/pkg/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// migrated returns an env whose queue is a new, migrated database.
func migrated(t *testing.T) *op.Env {
	t.Helper()
	url := pgtest.URL(t)
	if _, err := pgstore.Migrate(context.Background(), url); err != nil {
		t.Fatal(err)
	}
	return &op.Env{Store: store.New(filepath.Join(t.TempDir(), "lm.db"), time.Second), Queue: url, Stderr: io.Discard, Now: time.Now}
}

func TestUnmigratedDatabaseIsRefusedWithTheWayOut(t *testing.T) {
	url := pgtest.URL(t)
	env := &op.Env{Store: store.New(filepath.Join(t.TempDir(), "lm.db"), time.Second), Queue: url, Stderr: io.Discard, Now: time.Now}
	_, err := queue.List(context.Background(), env, queue.ListInput{})
	if op.KindOf(err) != op.KindUnavailable || !strings.Contains(err.Error(), "schema version 0") {
		t.Fatalf("unmigrated database: %v", err)
	}
	if env := op.EnvelopeOf(err); !strings.Contains(env.Suggestion, "lm store migrate") {
		t.Fatalf("hint %q", env.Suggestion)
	}
}

func TestAddClaimRoundTrip(t *testing.T) {
	env := migrated(t)
	ctx := context.Background()
	if _, err := queue.Add(ctx, env, queue.AddInput{Contents: []string{"one", "two"}}); err != nil {
		t.Fatal(err)
	}
	zero := 0
	queue.Config(ctx, env, queue.ConfigInput{DefaultWaitSeconds: &zero})
	out, err := queue.Next(ctx, env, queue.NextInput{AgentID: "a"})
	if err != nil || out.Instruction == nil || out.Instruction.Content != "one" || out.RemainingPending != 1 {
		t.Fatalf("next: %+v %v", out, err)
	}
	list, err := queue.List(ctx, env, queue.ListInput{})
	if err != nil || len(list.Items) != 2 || list.Items[0].Content != "two" || list.Items[1].Status != queue.StatusConsumed {
		t.Fatalf("list: %+v %v", list, err)
	}
}

// raced runs first and second as two transactions on two connections, both
// reading before either writes: second writes after first committed.
func raced(t *testing.T, s *pgstore.Storage, first, second func(queue.Tx) error) (firstErr, secondErr error) {
	t.Helper()
	ctx := context.Background()
	read, committed := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Update(ctx, func(tx queue.Tx) error {
			tx.Pending(0) // the read both make
			close(read)
			<-committed
			return second(tx)
		})
	}()
	<-read
	firstErr = s.Update(ctx, first)
	close(committed)
	return firstErr, <-done
}

// Two people change one instruction at once on two connections: the one
// whose change lands second gets a conflict and the current state, and the
// first change stands.
func TestConcurrentEditLosesWithConflict(t *testing.T) {
	env := migrated(t)
	ctx := context.Background()
	added, err := queue.Add(ctx, env, queue.AddInput{Content: "original"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.Open(ctx, env.Queue)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var stale queue.Record
	s.View(ctx, func(tx queue.Tx) error { stale, _ = tx.Get(added.Item.ID); return nil })
	edit := func(text string) func(queue.Tx) error {
		return func(tx queue.Tx) error {
			r := stale
			r.Content = text
			return tx.Replace(r)
		}
	}
	firstErr, secondErr := raced(t, s, edit("by alice"), edit("by bob"))
	if firstErr != nil || !errors.Is(secondErr, queue.ErrConflict) {
		t.Fatalf("first edit: %v; second edit: %v (want ErrConflict)", firstErr, secondErr)
	}
	show, err := queue.Show(ctx, env, queue.IDInput{ID: added.Item.ID})
	if err != nil || show.Item.Content != "by alice" {
		t.Fatalf("after the race: %+v %v", show.Item, err)
	}
}

// Two reorders computed from one order: the second is a conflict, not a
// silent undoing of the first.
func TestConcurrentReorderLosesWithConflict(t *testing.T) {
	env := migrated(t)
	ctx := context.Background()
	added, err := queue.Add(ctx, env, queue.AddInput{Contents: []string{"a", "b", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := added.Items[0].ID, added.Items[1].ID, added.Items[2].ID
	s, err := pgstore.Open(ctx, env.Queue)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := []string{a, b, c}
	firstErr, secondErr := raced(t, s,
		func(tx queue.Tx) error { return tx.Reorder(before, []string{c, a, b}) },
		func(tx queue.Tx) error { return tx.Reorder(before, []string{b, a, c}) })
	if firstErr != nil || !errors.Is(secondErr, queue.ErrConflict) {
		t.Fatalf("first move: %v; second move: %v (want ErrConflict)", firstErr, secondErr)
	}
	list, _ := queue.List(ctx, env, queue.ListInput{Status: queue.StatusPending})
	var order string
	for _, it := range list.Items {
		order += it.Content
	}
	if order != "cab" {
		t.Fatalf("order after the race: %s", order)
	}
}

// An edit through the operation that loses to another change is exit 4
// (HTTP 409) naming the instruction as it is now.
func TestEditConflictReportsCurrentState(t *testing.T) {
	env := migrated(t)
	ctx := context.Background()
	added, _ := queue.Add(ctx, env, queue.AddInput{Content: "original"})
	s, err := pgstore.Open(ctx, env.Queue)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Hold the row in a transaction that changes it while the edit runs.
	locked, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Update(ctx, func(tx queue.Tx) error {
			r, _ := tx.Get(added.Item.ID)
			r.Content = "changed meanwhile"
			if err := tx.Replace(r); err != nil {
				return err
			}
			close(locked)
			<-release
			return nil
		})
	}()
	<-locked
	edited := make(chan error, 1)
	go func() {
		_, err := queue.Edit(ctx, env, queue.EditInput{ID: added.Item.ID, Content: "mine"})
		edited <- err
	}()
	// The edit read the old version and now waits on the row lock.
	waitUntilWaiting(t, env.Queue)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	err = <-edited
	if op.KindOf(err) != op.KindConflict || !strings.Contains(err.Error(), "changed meanwhile") {
		t.Fatalf("losing edit: %v", err)
	}
}

// waitUntilWaiting returns once some session of the database waits on a lock.
func waitUntilWaiting(t *testing.T, url string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for range 1000 {
		var n int
		conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'").Scan(&n)
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no session waited on a lock within 10s")
}

// PostgreSQL restarts while an agent waits: operations meanwhile fail as
// unavailable (exit 6), and the waiting call carries on and takes the
// instruction added once the database is back.
func TestWaitingCallSurvivesDatabaseRestart(t *testing.T) {
	cluster := pgtest.Own(t)
	url := cluster.URL(t)
	ctx := context.Background()
	if _, err := pgstore.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	env := &op.Env{Store: store.New(filepath.Join(t.TempDir(), "lm.db"), time.Second), Queue: url, Stderr: io.Discard, Now: time.Now}
	wait := 120
	if _, err := queue.Config(ctx, env, queue.ConfigInput{DefaultWaitSeconds: &wait}); err != nil {
		t.Fatal(err)
	}
	got := make(chan queue.NextOutput, 1)
	failed := make(chan error, 1)
	go func() {
		out, err := queue.Next(ctx, env, queue.NextInput{AgentID: "patient"})
		if err != nil {
			failed <- err
		}
		got <- out
	}()
	for range 1000 {
		s, _ := queue.Status(ctx, env, queue.Empty{})
		if s.Agent != nil && s.Agent.Waiting {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cluster.Restart(t)
	// The pool's connections died with the server: calls fail as
	// unavailable until it has new ones.
	var err error
	for range 100 {
		if _, err = queue.Add(ctx, env, queue.AddInput{Content: "after the restart"}); err == nil {
			break
		}
		if op.KindOf(err) != op.KindUnavailable || strings.Contains(err.Error(), "password") {
			t.Fatalf("add during the restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-failed:
		t.Fatalf("the waiting call ended with %v", err)
	case out := <-got:
		if out.Instruction == nil || out.Instruction.Content != "after the restart" {
			t.Fatalf("the waiting call got %+v", out)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the waiting call did not take the instruction added after the restart")
	}
}

// A database a newer lm migrated is refused, by the operations and by
// lm store migrate, rather than misread or downgraded.
func TestNewerSchemaIsRefused(t *testing.T) {
	env := migrated(t)
	ctx := context.Background()
	conn := pgtest.Connect(t, env.Queue)
	if _, err := conn.Exec(ctx, "UPDATE lm_schema SET version = $1", pgstore.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	if _, err := pgstore.Open(ctx, env.Queue); op.KindOf(err) != op.KindUnavailable || !strings.Contains(err.Error(), "newer than this lm understands") {
		t.Fatalf("open: %v", err)
	}
	if _, err := pgstore.Migrate(ctx, env.Queue); op.KindOf(err) != op.KindUnavailable || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("migrate: %v", err)
	}
	var v int
	conn.QueryRow(ctx, "SELECT version FROM lm_schema").Scan(&v)
	if v != pgstore.SchemaVersion+1 {
		t.Fatalf("migrate changed the newer schema to %d", v)
	}
}

// A queue kept by schema version 1 keeps its instructions, counts and
// events through lm store migrate, and its event ids keep growing.
func TestMigrationFromVersion1KeepsTheQueue(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	if _, err := pgstore.MigrateTo(ctx, url, 1); err != nil {
		t.Fatal(err)
	}
	conn := pgtest.Connect(t, url)
	// What a version 1 lm left: two pending, one consumed, three events.
	for _, sql := range []string{
		`INSERT INTO lm_queue_items (id, content, status, created_at, updated_at, consumed_at, consumed_by, ord) VALUES
			('01A', 'first', 'pending', now(), now(), NULL, NULL, 1024),
			('01B', 'second', 'pending', now(), now(), NULL, NULL, 2048),
			('01C', 'done', 'consumed', now(), now(), now(), 'agent', 512)`,
		`INSERT INTO lm_queue_settings VALUES (true, '{"default_wait_seconds": 0}')`,
		`INSERT INTO lm_queue_events SELECT n, 'instruction.created', now(), '{"id": "x"}' FROM generate_series(1, 3) n`,
		`UPDATE lm_queue_meta SET event_seq = 3, pending_count = 2, consumed_count = 1`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	env := &op.Env{Store: store.New(filepath.Join(t.TempDir(), "lm.db"), time.Second), Queue: url, Stderr: io.Discard, Now: time.Now}
	if _, err := queue.Status(ctx, env, queue.Empty{}); op.KindOf(err) != op.KindUnavailable || !strings.Contains(err.Error(), "schema version 1") {
		t.Fatalf("before the migration: %v", err)
	}
	out, err := pgstore.Migrate(ctx, url)
	if err != nil || out.From != 1 || out.To != pgstore.SchemaVersion {
		t.Fatalf("migrate: %+v %v", out, err)
	}
	// A new process, as after an upgrade.
	env.Queue = url + "&application_name=upgraded"
	st, err := queue.Status(ctx, env, queue.Empty{})
	if err != nil || st.Queue.PendingCount != 2 || st.Queue.ConsumedCount != 1 || st.LastEvent != 3 {
		t.Fatalf("status after the migration: %+v %v", st.Queue, err)
	}
	next, err := queue.Next(ctx, env, queue.NextInput{AgentID: "a"})
	if err != nil || next.Instruction == nil || next.Instruction.Content != "first" || next.RemainingPending != 1 {
		t.Fatalf("next: %+v %v", next, err)
	}
	old, err := queue.EventsSince(ctx, env, 0, 3)
	if err != nil || len(old) != 3 || old[0].ID != 1 || old[2].ID != 3 {
		t.Fatalf("old events: %+v %v", old, err)
	}
	fresh, err := queue.EventsSince(ctx, env, 3, 0)
	if err != nil || len(fresh) == 0 || fresh[0].Type != queue.EventConsumed {
		t.Fatalf("events after the migration: %+v %v", fresh, err)
	}
	st, _ = queue.Status(ctx, env, queue.Empty{})
	if st.Queue.PendingCount != 1 || st.Queue.ConsumedCount != 2 || st.LastEvent != fresh[len(fresh)-1].ID {
		t.Fatalf("status after a claim: %+v, last event %d", st.Queue, st.LastEvent)
	}
}

// The feed's guarantee where it is hardest: a transaction that began
// writing first commits its event last. A reader that read the later
// transaction's event must not then miss the earlier one's, which it would
// if it read events in id order before the earlier transaction ended.
func TestReaderNeverMissesAnEventCommittedBelowOneItRead(t *testing.T) {
	env := migrated(t)
	ctx := context.Background()
	s, err := pgstore.Open(ctx, env.Queue)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC()
	write := func(id string, hold <-chan struct{}, begun chan<- struct{}) error {
		return s.Update(ctx, func(tx queue.Tx) error {
			tx.Settings()
			r := queue.Record{ID: id, Content: id, Status: queue.StatusPending, CreatedAt: now, UpdatedAt: now, Order: 1}
			if err := tx.Insert([]queue.Record{r}); err != nil {
				return err
			}
			if begun != nil {
				close(begun)
			}
			if hold != nil {
				<-hold
			}
			return tx.Emit(queue.EventCreated, now, []byte(`{"id":"`+id+`"}`))
		})
	}
	read := func(since uint64) (events []queue.Event) {
		if err := s.View(ctx, func(tx queue.Tx) error { events = tx.EventsSince(since, 0); return tx.Err() }); err != nil {
			t.Fatal(err)
		}
		return events
	}
	release, begun := make(chan struct{}), make(chan struct{})
	earlier := make(chan error, 1)
	go func() { earlier <- write("earlier", release, begun) }()
	<-begun
	if err := write("later", nil, nil); err != nil {
		t.Fatal(err)
	}
	seen := read(0)
	close(release)
	if err := <-earlier; err != nil {
		t.Fatal(err)
	}
	var cursor uint64
	if len(seen) > 0 {
		cursor = seen[len(seen)-1].ID
	}
	seen = append(seen, read(cursor)...)
	var got []string
	for _, e := range seen {
		got = append(got, string(e.Data))
	}
	all := read(0)
	if len(seen) != 2 || len(all) != 2 || seen[0].ID != all[0].ID || seen[1].ID != all[1].ID {
		t.Fatalf("the reader saw %v, the feed holds %d events", got, len(all))
	}
}

// A follower whose feed holds an event back (a transaction older than the
// event's still ran) gets it once that transaction ends, although that
// transaction sends no notification: the process re-reads by itself.
func TestFollowerGetsEventsHeldBackByATransactionThatNeverNotifies(t *testing.T) {
	env := migrated(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := queue.Add(ctx, env, queue.AddInput{Contents: []string{"held"}}); err != nil {
		t.Fatal(err)
	}
	feed, err := queue.OpenFeed(ctx, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	delivered := make(chan queue.Event, 16)
	go feed.Follow(ctx, nil, func() bool { return false }, func(events []queue.Event) error {
		for _, e := range events {
			delivered <- e
		}
		return nil
	})
	other, err := pgstore.Open(ctx, env.Queue)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// A transaction that takes a lock, and with it a transaction id, and
	// commits nothing that notifies.
	release, holding := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- other.Update(ctx, func(tx queue.Tx) error {
			tx.Settings()
			if len(tx.Claim(1)) == 0 {
				return errors.New("nothing to claim")
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	if _, err := queue.Add(ctx, env, queue.AddInput{Contents: []string{"behind it"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-delivered:
		t.Fatalf("delivered %s while an older transaction ran", e.Data)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-delivered:
		if e.Type != queue.EventCreated || !strings.Contains(string(e.Data), "behind it") {
			t.Fatalf("delivered %s %s", e.Type, e.Data)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held-back event was never delivered")
	}
}

// An export restored into another cluster, whose transaction ids run lower
// than the exporting one's, carries on with event ids above the restored
// ones: a client resuming after the newest restored event misses nothing.
func TestRestoreIntoAnotherClusterKeepsEventIdsGrowing(t *testing.T) {
	ctx := context.Background()
	from := migrated(t)
	conn := pgtest.Connect(t, from.Queue)
	// The exporting cluster has run many more transactions.
	for range 300 {
		if _, err := conn.Exec(ctx, "SELECT pg_current_xact_id()"); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close(ctx)
	if _, err := queue.Add(ctx, from, queue.AddInput{Contents: []string{"before the move"}}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "queue.sql")
	if _, err := pgstore.Backup(ctx, from.Queue, file, false); err != nil {
		t.Fatal(err)
	}
	to := &op.Env{Store: from.Store, Queue: pgtest.Own(t).URL(t), Stderr: io.Discard, Now: time.Now}
	if _, err := pgstore.Migrate(ctx, to.Queue); err != nil {
		t.Fatal(err)
	}
	bin, err := pgtest.Bin()
	if err != nil {
		t.Fatal(err)
	}
	psql, err := exec.LookPath("psql")
	if err != nil {
		psql = filepath.Join(bin, "psql")
	}
	if out, err := exec.Command(psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "--single-transaction", "-f", file, to.Queue).CombinedOutput(); err != nil {
		t.Fatalf("psql: %v %s", err, out)
	}
	restored, err := queue.EventsSince(ctx, to, 0, 0)
	if err != nil || len(restored) != 1 {
		t.Fatalf("restored events: %v %v", restored, err)
	}
	if _, err := queue.Add(ctx, to, queue.AddInput{Contents: []string{"after the move"}}); err != nil {
		t.Fatal(err)
	}
	after, err := queue.EventsSince(ctx, to, restored[0].ID, 0)
	if err != nil || len(after) != 1 || !strings.Contains(string(after[0].Data), "after the move") {
		t.Fatalf("events after the restored %d: %v %v", restored[0].ID, after, err)
	}
}

// Claim(n) reserves up to n instructions from the head in one statement:
// a transaction claiming at the same time gets the ones after them, never
// one of them, and each gets them in queue order.
func TestClaimReservesSeveralFromTheHead(t *testing.T) {
	env := migrated(t)
	ctx := context.Background()
	if _, err := queue.Add(ctx, env, queue.AddInput{Contents: []string{"1", "2", "3", "4", "5"}}); err != nil {
		t.Fatal(err)
	}
	ids := func(rs []queue.Record) (out []string) {
		for _, r := range rs {
			out = append(out, r.Content)
		}
		return out
	}
	first, second := openStorage(t, env), openStorage(t, env)
	holding, release := make(chan []string, 1), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- first.Update(ctx, func(tx queue.Tx) error {
			holding <- ids(tx.Claim(3))
			<-release
			return errors.New("roll back: nothing consumed")
		})
	}()
	if got := <-holding; strings.Join(got, ",") != "1,2,3" {
		t.Fatalf("the first claim got %v, want 1,2,3", got)
	}
	var got []string
	if err := second.Update(ctx, func(tx queue.Tx) error {
		got = ids(tx.Claim(3))
		return errors.New("roll back")
	}); err == nil || strings.Join(got, ",") != "4,5" {
		t.Fatalf("a concurrent claim got %v (%v), want 4,5", got, err)
	}
	close(release)
	<-done
}

func openStorage(t *testing.T, env *op.Env) *pgstore.Storage {
	t.Helper()
	s, err := pgstore.Open(context.Background(), env.Queue)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
