package queue

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/store"
	"lmtool.dev/lm/pkg/testkit"
)

func setWait(t *testing.T, env *op.Env, seconds int) {
	t.Helper()
	if _, err := Config(context.Background(), env, ConfigInput{DefaultWaitSeconds: &seconds}); err != nil {
		t.Fatal(err)
	}
}

// A newer call from the same agent supersedes a waiting one: the older call
// ends without taking anything, the newer one gets the instruction.
func TestNewerCallSupersedesWaitingOne(t *testing.T) {
	env := testkit.Env(t)
	setWait(t, env, 30)
	ctx := context.Background()
	older := make(chan NextOutput, 1)
	go func() {
		out, err := Next(ctx, env, NextInput{AgentID: "a"})
		if err != nil {
			t.Error(err)
		}
		older <- out
	}()
	waitUntil(t, func() bool {
		s, _ := Status(ctx, env, Empty{})
		return s.Agent != nil && s.Agent.Waiting
	})
	newer := make(chan NextOutput, 1)
	go func() {
		out, _ := Next(ctx, env, NextInput{AgentID: "a"})
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
	if _, err := Add(ctx, env, AddInput{Content: "for the newer call"}); err != nil {
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
}

// Another agent's call is independent: both wait, one gets the instruction.
func TestDifferentAgentsDoNotSupersede(t *testing.T) {
	env := testkit.Env(t)
	setWait(t, env, 1)
	ctx := context.Background()
	results := make(chan NextOutput, 2)
	for _, agent := range []string{"x", "y"} {
		go func() {
			out, _ := Next(ctx, env, NextInput{AgentID: agent})
			results <- out
		}()
	}
	waitUntil(t, func() bool {
		s, _ := Status(ctx, env, Empty{})
		return len(s.Agents) == 2 && s.Agents[0].Waiting && s.Agents[1].Waiting
	})
	Add(ctx, env, AddInput{Content: "one"})
	got := 0
	for range 2 {
		if out := <-results; out.Instruction != nil {
			got++
		}
	}
	if got != 1 {
		t.Fatalf("%d agents got the one instruction", got)
	}
}

func TestStatusEventsCarryDerivedFlags(t *testing.T) {
	env := testkit.Env(t)
	setWait(t, env, 0)
	ctx := context.Background()
	Next(ctx, env, NextInput{AgentID: "a"})
	events, err := EventsSince(ctx, env, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	if last.Type != EventStatusChanged || string(last.Data) == "" || !strings.Contains(string(last.Data), `"connected":true`) {
		t.Fatalf("last event %s %s", last.Type, last.Data)
	}
}

func TestLargeBatchKeepsOnlyRetainedEvents(t *testing.T) {
	env := testkit.Env(t)
	ctx := context.Background()
	contents := make([]string, eventRetention+500)
	for i := range contents {
		contents[i] = "x"
	}
	if _, err := Add(ctx, env, AddInput{Contents: contents}); err != nil {
		t.Fatal(err)
	}
	events, _ := EventsSince(ctx, env, 0, 0)
	if len(events) != eventRetention || events[0].ID != 501 || events[len(events)-1].ID != uint64(len(contents)) {
		t.Fatalf("%d events kept, ids %d..%d", len(events), events[0].ID, events[len(events)-1].ID)
	}
	// Old events go a batch at a time: the window grows by up to a batch.
	Add(ctx, env, AddInput{Contents: contents[:trimBatch-1]})
	events, _ = EventsSince(ctx, env, 0, 0)
	if len(events) != eventRetention+trimBatch-1 || events[0].ID != 501 {
		t.Fatalf("within a batch: %d events from %d", len(events), events[0].ID)
	}
	Add(ctx, env, AddInput{Contents: []string{"one more", "and another"}})
	events, _ = EventsSince(ctx, env, 0, 0)
	last := events[len(events)-1].ID
	if len(events) != eventRetention || events[0].ID != last-eventRetention+1 {
		t.Fatalf("after a whole batch: %d events from %d to %d", len(events), events[0].ID, last)
	}
}

func TestMoveKeepsEveryInstruction(t *testing.T) {
	env := testkit.Env(t)
	ctx := context.Background()
	Add(ctx, env, AddInput{Contents: []string{"a", "b", "c", "d"}})
	list, _ := List(ctx, env, ListInput{Status: StatusPending})
	out, err := Move(ctx, env, MoveInput{ID: list.Items[3].ID, To: 2})
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
	first, _ := Next(ctx, env, NextInput{})
	if first.Instruction.Content != "a" {
		t.Fatalf("next after move: %s", first.Instruction.Content)
	}
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

// Settings stored before a setting existed read with its default, and
// settings that do not decode fail the read naming bucket and key.
func TestStoredSettingsReadOnce(t *testing.T) {
	env := testkit.Env(t)
	ctx := context.Background()
	put := func(v string) {
		t.Helper()
		if err := env.Store.Update(ctx, func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(bMeta)
			if err != nil {
				return err
			}
			return b.Put(kSettings, []byte(v))
		}); err != nil {
			t.Fatal(err)
		}
	}
	// read takes the settings as every operation does, in a read transaction.
	read := func() (Settings, error) {
		var s Settings
		err := view(ctx, env, func(t *tx) error { s = t.settings(); return nil })
		return s, err
	}
	put(`{"default_wait_seconds":7,"default_empty_response":"none"}`)
	got, err := read()
	if err != nil {
		t.Fatal(err)
	}
	if want := (Settings{DefaultWaitSeconds: 7, DefaultEmptyResponse: "none", AgentStaleAfterSeconds: DefaultAgentStaleAfter}); got != want {
		t.Errorf("settings %+v, want %+v", got, want)
	}
	put(`{"default_wait_seconds":"soon"}`)
	_, err = read()
	var corrupt *store.CorruptError
	if !errors.As(err, &corrupt) || corrupt.Bucket != "queue.meta" || corrupt.Key != "settings" {
		t.Errorf("damaged settings: %v", err)
	}
}
