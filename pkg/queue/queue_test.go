package queue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/queue"
	"lmtool.dev/lm/pkg/queue/pgstore"
	"lmtool.dev/lm/pkg/queue/pgstore/pgtest"
	"lmtool.dev/lm/pkg/testkit"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// onEveryStore runs a behaviour test on each backend: the local bbolt file
// and a PostgreSQL database.
func onEveryStore(t *testing.T, test func(t *testing.T, env *op.Env)) {
	t.Run("bbolt", func(t *testing.T) { test(t, testkit.Env(t)) })
	t.Run("postgres", func(t *testing.T) {
		env := testkit.Env(t)
		env.Queue = pgtest.URL(t)
		if _, err := pgstore.Migrate(context.Background(), env.Queue); err != nil {
			t.Fatal(err)
		}
		test(t, env)
	})
}

func setWait(t *testing.T, env *op.Env, seconds int) {
	t.Helper()
	if _, err := queue.Config(context.Background(), env, queue.ConfigInput{DefaultWaitSeconds: &seconds}); err != nil {
		t.Fatal(err)
	}
}

// A newer call from the same agent supersedes a waiting one: the older call
// ends without taking anything, the newer one gets the instruction.
func TestNewerCallSupersedesWaitingOne(t *testing.T) {
	onEveryStore(t, func(t *testing.T, env *op.Env) {
		setWait(t, env, 30)
		ctx := context.Background()
		older := make(chan queue.NextOutput, 1)
		go func() {
			out, err := queue.Next(ctx, env, queue.NextInput{AgentID: "a"})
			if err != nil {
				t.Error(err)
			}
			older <- out
		}()
		waitUntil(t, func() bool {
			s, _ := queue.Status(ctx, env, queue.Empty{})
			return s.Agent != nil && s.Agent.Waiting
		})
		newer := make(chan queue.NextOutput, 1)
		go func() {
			out, _ := queue.Next(ctx, env, queue.NextInput{AgentID: "a"})
			newer <- out
		}()
		select {
		case out := <-older:
			if out.Instruction != nil {
				t.Fatalf("superseded call took %+v", out.Instruction)
			}
			// The newer call still waits, and the agent's record says so.
			if s, _ := queue.Status(ctx, env, queue.Empty{}); s.Agent == nil || !s.Agent.Waiting {
				t.Fatalf("after the superseded call ended, the agent shows %+v", s.Agent)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the older call kept waiting after a newer one started")
		}
		if _, err := queue.Add(ctx, env, queue.AddInput{Content: "for the newer call"}); err != nil {
			t.Fatal(err)
		}
		select {
		case out := <-newer:
			if out.Instruction == nil || out.Instruction.Content != "for the newer call" {
				t.Fatalf("newer call got %+v", out)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the newer call was not woken by the add")
		}
	})
}

// Another agent's call is independent: both wait, one gets the instruction.
func TestDifferentAgentsDoNotSupersede(t *testing.T) {
	onEveryStore(t, func(t *testing.T, env *op.Env) {
		setWait(t, env, 1)
		ctx := context.Background()
		results := make(chan queue.NextOutput, 2)
		for _, agent := range []string{"x", "y"} {
			go func() {
				out, _ := queue.Next(ctx, env, queue.NextInput{AgentID: agent})
				results <- out
			}()
		}
		waitUntil(t, func() bool {
			s, _ := queue.Status(ctx, env, queue.Empty{})
			return len(s.Agents) == 2 && s.Agents[0].Waiting && s.Agents[1].Waiting
		})
		queue.Add(ctx, env, queue.AddInput{Content: "one"})
		got := 0
		for range 2 {
			if out := <-results; out.Instruction != nil {
				got++
			}
		}
		if got != 1 {
			t.Fatalf("%d agents got the one instruction", got)
		}
	})
}

func TestStatusEventsCarryDerivedFlags(t *testing.T) {
	onEveryStore(t, func(t *testing.T, env *op.Env) {
		setWait(t, env, 0)
		ctx := context.Background()
		queue.Next(ctx, env, queue.NextInput{AgentID: "a"})
		events, err := queue.EventsSince(ctx, env, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		last := events[len(events)-1]
		if last.Type != queue.EventStatusChanged || string(last.Data) == "" || !strings.Contains(string(last.Data), `"connected":true`) {
			t.Fatalf("last event %s %s", last.Type, last.Data)
		}
	})
}

// Event ids grow but need not be consecutive (the database's are not), so
// the events kept are told by the instructions they carry.
func TestLargeBatchKeepsOnlyRetainedEvents(t *testing.T) {
	onEveryStore(t, func(t *testing.T, env *op.Env) {
		ctx := context.Background()
		contents := make([]string, queue.EventRetention+500)
		for i := range contents {
			contents[i] = "x"
		}
		added, err := queue.Add(ctx, env, queue.AddInput{Contents: contents})
		if err != nil {
			t.Fatal(err)
		}
		events := ascendingEvents(t, env)
		if len(events) != queue.EventRetention || itemOf(t, events[0]) != added.Items[500].ID || itemOf(t, events[len(events)-1]) != added.Items[len(contents)-1].ID {
			t.Fatalf("%d events kept, of instructions %s..%s", len(events), itemOf(t, events[0]), itemOf(t, events[len(events)-1]))
		}
		first := events[0].ID
		// Old events go a batch at a time: the window grows by up to a batch.
		queue.Add(ctx, env, queue.AddInput{Contents: contents[:queue.TrimBatch-1]})
		events = ascendingEvents(t, env)
		if len(events) != queue.EventRetention+queue.TrimBatch-1 || events[0].ID != first {
			t.Fatalf("within a batch: %d events from %d", len(events), events[0].ID)
		}
		last, err := queue.Add(ctx, env, queue.AddInput{Contents: []string{"one more", "and another"}})
		if err != nil {
			t.Fatal(err)
		}
		events = ascendingEvents(t, env)
		if len(events) != queue.EventRetention || itemOf(t, events[len(events)-1]) != last.Items[1].ID {
			t.Fatalf("after a whole batch: %d events, the newest of %s", len(events), itemOf(t, events[len(events)-1]))
		}
	})
}

// ascendingEvents reads every stored event and checks their ids grow.
func ascendingEvents(t *testing.T, env *op.Env) []queue.Event {
	t.Helper()
	events, err := queue.EventsSince(context.Background(), env, 0, 0)
	if err != nil || len(events) == 0 {
		t.Fatalf("events: %d, %v", len(events), err)
	}
	for i := 1; i < len(events); i++ {
		if events[i].ID <= events[i-1].ID {
			t.Fatalf("event %d has id %d after %d", i, events[i].ID, events[i-1].ID)
		}
	}
	return events
}

// itemOf is the id of the instruction an event carries.
func itemOf(t *testing.T, e queue.Event) string {
	t.Helper()
	var item struct{ ID string }
	if err := json.Unmarshal(e.Data, &item); err != nil {
		t.Fatalf("event %d: %v", e.ID, err)
	}
	return item.ID
}

func TestMoveKeepsEveryInstruction(t *testing.T) {
	onEveryStore(t, func(t *testing.T, env *op.Env) {
		ctx := context.Background()
		queue.Add(ctx, env, queue.AddInput{Contents: []string{"a", "b", "c", "d"}})
		list, _ := queue.List(ctx, env, queue.ListInput{Status: queue.StatusPending})
		out, err := queue.Move(ctx, env, queue.MoveInput{ID: list.Items[3].ID, To: 2})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		for i, it := range out.Items {
			got += it.Content
			if *it.Position != i+1 {
				t.Errorf("%s at position %d, listed %d", it.Content, *it.Position, i+1)
			}
		}
		if got != "adbc" {
			t.Fatalf("order after move: %s", got)
		}
		setWait(t, env, 0)
		first, _ := queue.Next(ctx, env, queue.NextInput{})
		if first.Instruction.Content != "a" {
			t.Fatalf("next after move: %s", first.Instruction.Content)
		}
	})
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Many adders and claimers commit at once while a reader follows the feed,
// resuming after the last id it read each time, a few events at a time, as
// a client reconnecting with Last-Event-ID does: it reads every event the
// queue ends up holding, each once, in order.
func TestFeedFollowerMissesNothingUnderConcurrentWriters(t *testing.T) {
	onEveryStore(t, func(t *testing.T, env *op.Env) {
		setWait(t, env, 0)
		ctx := context.Background()
		const writers, each = 4, 40
		var (
			wg      sync.WaitGroup
			claimed atomic.Int64
			failed  = make(chan error, 2*writers)
		)
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					if _, err := queue.Add(ctx, env, queue.AddInput{Contents: []string{fmt.Sprintf("%d.%d", w, i)}}); err != nil {
						failed <- err
						return
					}
				}
			})
			wg.Go(func() {
				for claimed.Load() < writers*each {
					out, err := queue.Next(ctx, env, queue.NextInput{AgentID: fmt.Sprintf("agent-%d", w)})
					if err != nil {
						failed <- err
						return
					}
					if out.Instruction != nil {
						claimed.Add(1)
					}
				}
			})
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		var (
			seen   []queue.Event
			cursor uint64
		)
		follow := func() {
			events, err := queue.EventsSince(ctx, env, cursor, 5)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range events {
				seen = append(seen, e)
				cursor = e.ID
			}
		}
		for running := true; running; {
			select {
			case <-done:
				running = false
			case err := <-failed:
				t.Fatal(err)
			default:
				follow()
			}
		}
		all, err := queue.EventsSince(ctx, env, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for len(seen) < len(all) {
			before := len(seen)
			follow()
			if len(seen) == before {
				break
			}
		}
		if len(seen) != len(all) {
			t.Fatalf("the follower read %d events, the queue holds %d", len(seen), len(all))
		}
		for i := range all {
			if seen[i].ID != all[i].ID || seen[i].Type != all[i].Type {
				t.Fatalf("event %d: the follower read %d %s, the queue holds %d %s", i, seen[i].ID, seen[i].Type, all[i].ID, all[i].Type)
			}
		}
		if consumed := countType(all, queue.EventConsumed); consumed != writers*each {
			t.Fatalf("%d consumptions recorded of %d", consumed, writers*each)
		}
	})
}

func countType(events []queue.Event, typ string) int {
	n := 0
	for _, e := range events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// A move or a requeue among more pending instructions than the retention
// window records only the window's worth of events, on every store: one
// event per pending instruction made the transaction bigger than the
// database records in one, and the move failed there.
func TestMoveAmongManyRecordsTheWindow(t *testing.T) {
	onEveryStore(t, func(t *testing.T, env *op.Env) {
		ctx := context.Background()
		contents := make([]string, 17000) // past the database's events per transaction
		for i := range contents {
			contents[i] = fmt.Sprint(i)
		}
		added, err := queue.Add(ctx, env, queue.AddInput{Contents: contents})
		if err != nil {
			t.Fatal(err)
		}
		last := added.Items[len(contents)-1].ID
		moved, err := queue.Move(ctx, env, queue.MoveInput{ID: last, To: 1})
		if err != nil {
			t.Fatalf("move: %v", err)
		}
		if moved.Items[0].ID != last || len(moved.Items) != len(contents) {
			t.Fatalf("after the move: first %s of %d", moved.Items[0].ID, len(moved.Items))
		}
		events := ascendingEvents(t, env)
		if newest := events[len(events)-1]; newest.Type != queue.EventUpdated || itemOf(t, newest) != added.Items[len(contents)-2].ID {
			t.Fatalf("the newest event is %s of %s, want the update of the last pending", newest.Type, itemOf(t, newest))
		}
		next, err := queue.Next(ctx, env, queue.NextInput{AgentID: "a"})
		if err != nil || next.Instruction == nil || next.Instruction.ID != last {
			t.Fatalf("next: %+v, %v", next.Instruction, err)
		}
		requeued, err := queue.Requeue(ctx, env, queue.IDInput{ID: last})
		if err != nil || requeued.Item.ID != last || requeued.Item.Position == nil || *requeued.Item.Position != 1 {
			t.Fatalf("requeue: %+v, %v", requeued.Item, err)
		}
	})
}
