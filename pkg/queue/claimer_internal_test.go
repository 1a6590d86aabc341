package queue

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/testkit"
)

// lookedCall is a waiting call past its first look, as a claimer holds it.
func lookedCall(ctx context.Context, env *op.Env, agent string) *waiter {
	w := &waiter{ctx: ctx, env: env, agent: agent, start: env.Now(),
		looked: make(chan struct{}), answer: make(chan answer, 1), seen: true}
	w.calls, w.gen = nextGeneration(agent)
	return w
}

func add(t *testing.T, env *op.Env, contents ...string) {
	t.Helper()
	if _, err := Add(context.Background(), env, AddInput{Contents: contents}); err != nil {
		t.Fatal(err)
	}
}

func pendingContents(t *testing.T, env *op.Env) []string {
	t.Helper()
	out, err := List(context.Background(), env, ListInput{Status: StatusPending})
	if err != nil {
		t.Fatal(err)
	}
	var contents []string
	for _, it := range out.Items {
		contents = append(contents, it.Content)
	}
	return contents
}

// roundOf runs a round over ws.
func roundOf(env *op.Env, ws ...*waiter) ([]look, error) {
	_, looks, err := round(env, func() []*waiter { return ws })
	return looks, err
}

func handed(l look) string {
	if l.out == nil {
		return ""
	}
	return l.out.Instruction.Content
}

// A call superseded by a newer one of the same agent is passed over in the
// transaction itself, even while it still waits: the newer call gets the
// instruction.
func TestRoundPassesOverASupersededCall(t *testing.T) {
	env := testkit.Env(t)
	older := lookedCall(context.Background(), env, "superseded-agent")
	newer := lookedCall(context.Background(), env, "superseded-agent")
	add(t, env, "x")
	looks, err := roundOf(env, older, newer)
	if err != nil {
		t.Fatal(err)
	}
	if !looks[0].passed || looks[0].out != nil {
		t.Errorf("the superseded call: %+v", looks[0])
	}
	if handed(looks[1]) != "x" {
		t.Errorf("the newer call got %q, want x", handed(looks[1]))
	}
}

// A call whose caller has gone takes nothing: the instruction goes to the
// next call, or stays pending.
func TestRoundHandsNothingToAGoneCaller(t *testing.T) {
	env := testkit.Env(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	gone := lookedCall(ctx, env, "gone")
	live := lookedCall(context.Background(), env, "live")
	add(t, env, "x")
	looks, err := roundOf(env, gone, live)
	if err != nil {
		t.Fatal(err)
	}
	if !looks[0].passed || handed(looks[1]) != "x" {
		t.Fatalf("gone caller %+v, live caller got %q", looks[0], handed(looks[1]))
	}
	add(t, env, "y")
	if looks, err = roundOf(env, gone); err != nil || !looks[0].passed {
		t.Fatalf("gone caller alone: %+v, %v", looks[0], err)
	}
	if got := pendingContents(t, env); len(got) != 1 || got[0] != "y" {
		t.Fatalf("pending after the gone caller's round: %q", got)
	}
}

// leavingCtx is a caller that is there when first asked and gone ever
// after: it leaves while its claim is being made.
type leavingCtx struct {
	context.Context
	asked atomic.Int32
}

func (c *leavingCtx) Err() error {
	if c.asked.Add(1) > 1 {
		return context.Canceled
	}
	return nil
}

// A caller that leaves after its instruction was claimed but before the
// commit gets nothing: the claim rolls back, the instruction stays pending
// and no event says it was consumed.
func TestRoundRollsBackAClaimWhoseCallerLeftBeforeTheCommit(t *testing.T) {
	env := testkit.Env(t)
	w := lookedCall(&leavingCtx{Context: context.Background()}, env, "leaving")
	add(t, env, "x")
	before, _ := LastEvent(context.Background(), env)
	looks, err := roundOf(env, w)
	if err != nil {
		t.Fatal(err)
	}
	if !looks[0].passed || looks[0].out != nil {
		t.Fatalf("the leaving caller: %+v", looks[0])
	}
	if got := pendingContents(t, env); len(got) != 1 || got[0] != "x" {
		t.Fatalf("pending: %q", got)
	}
	events, _ := EventsSince(context.Background(), env, before, 0)
	for _, e := range events {
		if e.Type == EventConsumed {
			t.Errorf("event %d says it was consumed: %s", e.ID, e.Data)
		}
	}
}

// addAfterFirstWrite is a queue in which an instruction is added the moment
// the first write transaction after arm commits: between a claimer's first
// look, which finds nothing, and its wait.
type addAfterFirstWrite struct {
	boltStorage
	armed atomic.Bool
	once  sync.Once
	add   func()
}

func (s *addAfterFirstWrite) Update(ctx context.Context, fn func(Tx) error) error {
	err := s.boltStorage.Update(ctx, fn)
	if s.armed.Load() {
		s.once.Do(s.add)
	}
	return err
}

// An instruction added right after a call's first look wakes it: the
// claimer subscribes to changes before it looks.
func TestNoWakeUpLostBetweenFirstLookAndWait(t *testing.T) {
	local := testkit.Env(t)
	hooked := &addAfterFirstWrite{boltStorage: boltStorage{local.Store}}
	hooked.add = func() { add(t, local, "added between look and wait") }
	RegisterBackend(func(context.Context, string) (Storage, error) { return hooked, nil }, "addafterfirstwrite")
	env := *local
	env.Queue = "addafterfirstwrite://" + t.Name()
	wait := 60
	if _, err := Config(context.Background(), &env, ConfigInput{DefaultWaitSeconds: &wait}); err != nil {
		t.Fatal(err)
	}
	hooked.armed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := Next(ctx, &env, NextInput{AgentID: "a"})
	if err != nil {
		t.Fatalf("the call was not woken by the add: %v", err)
	}
	if out.Instruction == nil || out.Instruction.Content != "added between look and wait" {
		t.Fatalf("got %+v", out)
	}
}

// A face that tells when its reply reached the agent (lm mcp, the command
// line) leaves the delivery unacknowledged, naming this process, until it
// does; one that cannot tell (the gateway) records it acknowledged in the
// claim.
func TestDeliveryAwaitsAcknowledgementOnlyWhereTheFaceTells(t *testing.T) {
	env := testkit.Env(t)
	wait := 0
	if _, err := Config(context.Background(), env, ConfigInput{DefaultWaitSeconds: &wait}); err != nil {
		t.Fatal(err)
	}
	add(t, env, "told", "untold")
	record := func(id string) Record {
		var r Record
		if err := view(context.Background(), env, func(t *tx) error { r, _ = t.Get(id); return nil }); err != nil {
			t.Fatal(err)
		}
		return r
	}

	var acknowledge func()
	tells := *env
	tells.AfterReply = func(_ string, fn func()) { acknowledge = fn }
	out, err := Next(context.Background(), &tells, NextInput{AgentID: "a"})
	if err != nil || out.Instruction == nil || out.Instruction.Content != "told" {
		t.Fatalf("%+v, %v", out, err)
	}
	if r := record(out.Instruction.ID); !r.Unacknowledged || r.Consumer == nil {
		t.Fatalf("before the reply reached the agent: unacknowledged %v, consumer %v", r.Unacknowledged, r.Consumer)
	}
	acknowledge()
	if r := record(out.Instruction.ID); r.Unacknowledged || r.Consumer != nil {
		t.Fatalf("after: unacknowledged %v, consumer %v", r.Unacknowledged, r.Consumer)
	}

	out, err = Next(context.Background(), env, NextInput{AgentID: "a"})
	if err != nil || out.Instruction == nil || out.Instruction.Content != "untold" {
		t.Fatalf("%+v, %v", out, err)
	}
	if r := record(out.Instruction.ID); r.Unacknowledged || r.Consumer != nil {
		t.Fatalf("a face that cannot tell: unacknowledged %v, consumer %v", r.Unacknowledged, r.Consumer)
	}
}

// A call that comes while the claimer's round waits for the commit in
// progress is in that round: with two instructions pending, both calls get
// theirs in one transaction, not the second in a round of its own after
// the first round's commit.
func TestRoundTakesTheCallsThatCameWhileItWaitedForACommit(t *testing.T) {
	env := testkit.Env(t)
	wait := 60
	if _, err := Config(context.Background(), env, ConfigInput{DefaultWaitSeconds: &wait}); err != nil {
		t.Fatal(err)
	}
	add(t, env, "first", "second")
	// Every transaction reads a time of its own.
	var ticks atomic.Int64
	base := time.Now()
	env.Now = func() time.Time { return base.Add(time.Duration(ticks.Add(1)) * time.Millisecond) }

	entered, release := make(chan struct{}), make(chan struct{})
	go env.Store.Batch(context.Background(), func(*bolt.Tx) error {
		close(entered)
		<-release
		return nil
	})
	<-entered
	c, err := claimerOf(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	waiting := func(n int) {
		for {
			c.mu.Lock()
			got := len(c.waiters)
			c.mu.Unlock()
			if got == n {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	answers := make(chan NextOutput, 2)
	call := func(agent string) {
		go func() {
			out, err := Next(context.Background(), env, NextInput{AgentID: agent})
			if err != nil {
				t.Error(err)
			}
			answers <- out
		}()
	}
	call("a")
	waiting(1)
	// Time for a claimer that takes its calls before the commit to start
	// its round with this one alone.
	time.Sleep(50 * time.Millisecond)
	call("b")
	waiting(2)
	close(release)
	a, b := <-answers, <-answers
	if a.Instruction == nil || b.Instruction == nil {
		t.Fatalf("answers %+v, %+v", a, b)
	}
	if !a.Instruction.ConsumedAt.Equal(b.Instruction.ConsumedAt) {
		t.Fatalf("consumed at %s and %s: in two transactions", a.Instruction.ConsumedAt, b.Instruction.ConsumedAt)
	}
}

// A call is answered once however many settle it: the loop's own look and
// a pass in the same failed commit can both report the failure, and a
// second answer to a call that has not read the first would block, holding
// the claimer's lock, every later call and write of the process.
func TestACallSettledTwiceIsAnsweredOnce(t *testing.T) {
	env := testkit.Env(t)
	c := &claimer{kick: make(chan struct{}, 1)}
	w := lookedCall(context.Background(), env, "agent")
	c.waiters = []*waiter{w}
	failed := op.Errorf(op.KindInternal, "the commit failed")
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		c.settle([]*waiter{w}, make([]look, 1), failed)
		c.settle([]*waiter{w}, make([]look, 1), failed)
		c.release([]*waiter{w})
	}()
	select {
	case <-settled:
	case <-time.After(5 * time.Second):
		t.Fatal("settling a call a second time blocked")
	}
	if a := <-w.answer; a.err == nil {
		t.Errorf("the call's answer: %+v, want the failure", a)
	}
	select {
	case a := <-w.answer:
		t.Errorf("a second answer: %+v", a)
	default:
	}
}
