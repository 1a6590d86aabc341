package queue_test

import (
	"context"
	"strings"
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

func TestLargeBatchKeepsOnlyRetainedEvents(t *testing.T) {
	onEveryStore(t, func(t *testing.T, env *op.Env) {
		ctx := context.Background()
		contents := make([]string, queue.EventRetention+500)
		for i := range contents {
			contents[i] = "x"
		}
		if _, err := queue.Add(ctx, env, queue.AddInput{Contents: contents}); err != nil {
			t.Fatal(err)
		}
		events, _ := queue.EventsSince(ctx, env, 0, 0)
		if len(events) != queue.EventRetention || events[0].ID != 501 || events[len(events)-1].ID != uint64(len(contents)) {
			t.Fatalf("%d events kept, ids %d..%d", len(events), events[0].ID, events[len(events)-1].ID)
		}
		// Old events go a batch at a time: the window grows by up to a batch.
		queue.Add(ctx, env, queue.AddInput{Contents: contents[:queue.TrimBatch-1]})
		events, _ = queue.EventsSince(ctx, env, 0, 0)
		if len(events) != queue.EventRetention+queue.TrimBatch-1 || events[0].ID != 501 {
			t.Fatalf("within a batch: %d events from %d", len(events), events[0].ID)
		}
		queue.Add(ctx, env, queue.AddInput{Contents: []string{"one more", "and another"}})
		events, _ = queue.EventsSince(ctx, env, 0, 0)
		last := events[len(events)-1].ID
		if len(events) != queue.EventRetention || events[0].ID != last-queue.EventRetention+1 {
			t.Fatalf("after a whole batch: %d events from %d to %d", len(events), events[0].ID, last)
		}
	})
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
