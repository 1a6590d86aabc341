package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/gateway"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/queue"
	"lmtool.dev/lm/pkg/queue/pgstore"
	"lmtool.dev/lm/pkg/queue/pgstore/pgtest"
	"lmtool.dev/lm/pkg/registry"
	"lmtool.dev/lm/pkg/store"
)

// clock is a time the test moves, shared by the gateway and the watch, so
// an agent turns idle when the test says and both faces stamp it alike.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// TestWatchAndEventStreamDeliverTheSameFeed: `lm queue watch` and
// GET /api/events, following the same store from the same event, deliver
// the same sequence for the same commits — stored events with the same
// derived agent flags, and an agent turning idle, which no process
// commits, announced on both. On both backends: the database's event ids
// are not consecutive, and its events become readable a moment after they
// commit.
func TestWatchAndEventStreamDeliverTheSameFeed(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) { sameFeed(t, "") })
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.Own(t).URL(t)
		if _, err := pgstore.Migrate(context.Background(), url); err != nil {
			t.Fatal(err)
		}
		sameFeed(t, url)
	})
}

func sameFeed(t *testing.T, queueURL string) {
	clk := &clock{now: time.Now().UTC()}
	g := start(t, gateway.Options{Env: op.Env{Now: clk.Now, Queue: queueURL}})
	ops := map[string]op.Operation{}
	for _, o := range registry.All() {
		ops[o.Info().Name] = o
	}
	call := func(tool string, caller op.Caller, input string) {
		t.Helper()
		env := op.Env{Store: store.New(g.store, 0), Queue: queueURL, Home: filepath.Dir(g.store), Now: clk.Now, Caller: caller}
		if _, err := ops[tool].Call(context.Background(), &env, json.RawMessage(input)); err != nil {
			t.Fatalf("%s %s: %v", tool, input, err)
		}
	}
	person := op.Caller{Role: op.RolePerson, Terminal: true}
	call("queue_add", person, `{"content": "before the faces open"}`)
	_, status := g.do("GET", "/api/status", "")
	from := uint64(status["last_event_id"].(float64))

	// The command line's face: the watch operation, whose events lm prints
	// as JSON Lines.
	watched := make(chan map[string]any, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watchEnv := op.Env{Store: store.New(g.store, 0), Queue: queueURL, Home: filepath.Dir(g.store), Now: clk.Now, Caller: person,
		Emit: func(v any) error {
			watched <- roundTrip(t, v)
			return nil
		}}
	watchDone := make(chan error, 1)
	go func() {
		_, err := ops["queue_watch"].Call(ctx, &watchEnv, json.RawMessage(fmt.Sprintf(`{"since": %d}`, from)))
		watchDone <- err
	}()
	// The page's face, resuming from the same event.
	stream := g.events(strconv.FormatUint(from, 10))

	var fromWatch, fromStream []map[string]any
	// collect reads both faces until each has delivered an event that
	// satisfies done.
	collect := func(done func(map[string]any) bool) {
		t.Helper()
		for got := false; !got; {
			select {
			case e := <-watched:
				fromWatch = append(fromWatch, e)
				got = done(e)
			case err := <-watchDone:
				t.Fatalf("the watch ended: %v", err)
			case <-time.After(20 * time.Second):
				t.Fatalf("the watch delivered nothing in 20 s after %v", fromWatch)
			}
		}
		for got := false; !got; {
			m := stream.next(t)
			if m.event == "resync" {
				t.Fatalf("the stream asked for a resync: %v", m.data)
			}
			fromStream = append(fromStream, m.data)
			got = done(m.data)
		}
	}
	lastStored := func() func(map[string]any) bool {
		_, status := g.do("GET", "/api/status", "")
		last := status["last_event_id"].(float64)
		return func(e map[string]any) bool { return e["id"] == last }
	}

	g.do("PATCH", "/api/config", `{"agent_stale_after_seconds": 60}`)
	g.do("POST", "/api/instructions", `{"content": "for the agent"}`)
	call("get_user_request", op.Caller{Role: op.RoleAgent, Name: "a1"}, `{"agent_id": "a1"}`)
	collect(lastStored())

	// The agent's minute passes. Nothing is committed to the queue; a
	// write elsewhere in the store (a bare notification on the database)
	// wakes both faces, which look again.
	clk.advance(2 * time.Minute)
	if queueURL != "" {
		conn, err := pgx.Connect(context.Background(), queueURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "SELECT pg_notify('lm_queue', '')"); err != nil {
			t.Fatal(err)
		}
	} else if err := store.New(g.store, 0).Update(context.Background(), func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("test.nudge"))
		if err != nil {
			return err
		}
		return b.Put([]byte("at"), []byte(clk.Now().String()))
	}); err != nil {
		t.Fatal(err)
	}
	collect(func(e map[string]any) bool {
		d, _ := e["data"].(map[string]any)
		return e["type"] == queue.EventStatusChanged && e["id"] == 0.0 && d["agent_id"] == "a1" && d["connected"] == false
	})

	if !reflect.DeepEqual(fromWatch, fromStream) {
		t.Errorf("the faces differ:\nwatch  %v\nstream %v", fromWatch, fromStream)
	}
	var types []string
	for _, e := range fromWatch {
		types = append(types, e["type"].(string))
	}
	want := []string{queue.EventConfigUpdated, queue.EventCreated, queue.EventConsumed, queue.EventStatusChanged, queue.EventStatusChanged}
	if !reflect.DeepEqual(types, want) {
		t.Errorf("the feed is %q, want %q", types, want)
	}
}

// roundTrip is v as a client decodes it from JSON.
func roundTrip(t *testing.T, v any) map[string]any {
	data, err := json.Marshal(v)
	if err != nil {
		t.Error(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Error(err)
	}
	return m
}
