package queue_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/queue"
)

// The feed announces an agent turning idle once, after the stored events of
// the look that found it, and times the look for the moment it happens;
// what a look not taken cannot know, it does not announce.
func TestFeedAnnouncesAgentsTurningIdle(t *testing.T) {
	onEveryStore(t, func(t *testing.T, env *op.Env) {
		now := time.Now().UTC()
		env.Now = func() time.Time { return now }
		ctx := context.Background()
		stale := 60
		if _, err := queue.Config(ctx, env, queue.ConfigInput{AgentStaleAfterSeconds: &stale}); err != nil {
			t.Fatal(err)
		}
		feed, err := queue.OpenFeed(ctx, env, nil)
		if err != nil {
			t.Fatal(err)
		}
		read := func(agents bool) ([]queue.Event, time.Time) {
			t.Helper()
			events, next, err := feed.Read(ctx, agents)
			if err != nil {
				t.Fatal(err)
			}
			return events, next
		}
		setWait(t, env, 0)
		if _, err := queue.Next(ctx, env, queue.NextInput{AgentID: "a"}); err != nil {
			t.Fatal(err)
		}
		events, next := read(true)
		if len(events) < 2 || events[0].Type != queue.EventConfigUpdated || events[len(events)-1].Type != queue.EventStatusChanged || !allStored(events) {
			t.Fatalf("first read: %+v", events)
		}
		if seen := now.Add(time.Minute); next.Before(seen) || next.After(seen.Add(time.Second)) {
			t.Errorf("next look at %v, want just after %v (a minute after the agent was seen)", next, seen)
		}

		now = now.Add(2 * time.Minute)
		events, next = read(true)
		if len(events) != 1 || events[0].ID != 0 || events[0].Type != queue.EventStatusChanged || !events[0].Timestamp.Equal(now) {
			t.Fatalf("after the agent's minute: %+v, want one idle announcement stamped now", events)
		}
		var a queue.Agent
		if err := json.Unmarshal(events[0].Data, &a); err != nil || a.AgentID != "a" || a.Connected {
			t.Fatalf("announced %s", events[0].Data)
		}
		if !next.IsZero() {
			t.Errorf("no agent is connected, yet the next look is at %v", next)
		}
		if events, _ = read(true); len(events) != 0 {
			t.Fatalf("announced again: %+v", events)
		}

		// A read that does not look forgets the agents: the look after it
		// has nothing to compare, so it announces nothing.
		now = now.Add(time.Second)
		if _, err := queue.Next(ctx, env, queue.NextInput{AgentID: "a"}); err != nil {
			t.Fatal(err)
		}
		if events, next = read(false); len(events) == 0 || !allStored(events) || !next.IsZero() {
			t.Fatalf("a read without agents: %+v, next %v", events, next)
		}
		now = now.Add(2 * time.Minute)
		if events, _ = read(true); len(events) != 0 {
			t.Fatalf("a first look announced %+v", events)
		}
		if feed.Cursor() == 0 {
			t.Error("the cursor did not move")
		}
	})
}

// Replay derives stored agent events as they stand now, as the feed does.
func TestReplayDerivesAgentsNow(t *testing.T) {
	onEveryStore(t, func(t *testing.T, env *op.Env) {
		now := time.Now().UTC()
		env.Now = func() time.Time { return now }
		ctx := context.Background()
		setWait(t, env, 0)
		if _, err := queue.Next(ctx, env, queue.NextInput{AgentID: "a"}); err != nil {
			t.Fatal(err)
		}
		stored, err := queue.EventsSince(ctx, env, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Hour)
		replayed, err := queue.Replay(ctx, env, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(replayed) != len(stored) {
			t.Fatalf("replayed %d events of %d", len(replayed), len(stored))
		}
		last := replayed[len(replayed)-1]
		var then, later queue.Agent
		json.Unmarshal(stored[len(stored)-1].Data, &then)
		json.Unmarshal(last.Data, &later)
		if last.Type != queue.EventStatusChanged || !then.Connected || later.Connected || last.ID != stored[len(stored)-1].ID {
			t.Fatalf("stored %s, replayed an hour later %s", stored[len(stored)-1].Data, last.Data)
		}
	})
}

func allStored(events []queue.Event) bool {
	for _, e := range events {
		if e.ID == 0 {
			return false
		}
	}
	return true
}
