package queue_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/queue"
	"lmtool.dev/lm/pkg/testkit"
)

// waiting starts a get_user_request for agent and returns once the queue
// records it waiting, so calls started one after another wait in that
// order. The result arrives on the returned channel.
func waiting(t *testing.T, env *op.Env, agent string) <-chan queue.NextOutput {
	t.Helper()
	ctx := context.Background()
	got := make(chan queue.NextOutput, 1)
	go func() {
		out, err := queue.Next(ctx, env, queue.NextInput{AgentID: agent})
		if err != nil {
			t.Error(err)
		}
		got <- out
	}()
	waitUntil(t, func() bool {
		s, _ := queue.Status(ctx, env, queue.Empty{})
		for _, a := range s.Agents {
			if a.AgentID == agent && a.Waiting {
				return true
			}
		}
		return false
	})
	return got
}

func received(t *testing.T, agent string, got <-chan queue.NextOutput) string {
	t.Helper()
	select {
	case out := <-got:
		if out.Instruction == nil {
			t.Fatalf("%s got no instruction: %+v", agent, out)
		}
		return out.Instruction.Content
	case <-time.After(10 * time.Second):
		t.Fatalf("%s got nothing within 10s", agent)
		return ""
	}
}

// Calls waiting in one process get instructions in the order they came:
// the one that has waited longest gets the head of the queue. A call that
// comes back after a delivery waits behind those still waiting.
func TestWaitingCallsAreServedInArrivalOrder(t *testing.T) {
	onEveryStore(t, func(t *testing.T, env *op.Env) {
		setWait(t, env, 60)
		ctx := context.Background()
		const calls, first = 8, 5
		agents := make([]string, calls)
		results := make([]<-chan queue.NextOutput, calls)
		for i := range calls {
			agents[i] = fmt.Sprintf("agent-%d", i)
			results[i] = waiting(t, env, agents[i])
		}
		add := func(prefix string, n int) {
			in := queue.AddInput{}
			for i := range n {
				in.Contents = append(in.Contents, fmt.Sprintf("%s-%d", prefix, i))
			}
			if _, err := queue.Add(ctx, env, in); err != nil {
				t.Fatal(err)
			}
		}
		add("first", first)
		for i := range first {
			if got, want := received(t, agents[i], results[i]), fmt.Sprintf("first-%d", i); got != want {
				t.Errorf("%s, waiting %d, got %s, want %s", agents[i], i+1, got, want)
			}
		}
		// Those served wait again, behind the three still waiting.
		for i := range first {
			results[i] = waiting(t, env, agents[i])
		}
		add("second", calls)
		order := append(agents[first:calls:calls], agents[:first]...)
		chans := append(results[first:calls:calls], results[:first]...)
		for i, agent := range order {
			if got, want := received(t, agent, chans[i]), fmt.Sprintf("second-%d", i); got != want {
				t.Errorf("%s, waiting %d, got %s, want %s", agent, i+1, got, want)
			}
		}
	})
}

// Many calls waiting in one process against concurrent adders: every
// instruction goes to exactly one call, and the store agrees.
func TestManyWaitingCallsTakeEachInstructionOnce(t *testing.T) {
	onEveryStore(t, func(t *testing.T, env *op.Env) {
		setWait(t, env, 1)
		const agents, adders, perAdder = 40, 4, 100
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		var (
			mu        sync.Mutex
			delivered = map[string]int{}
			all       = make(chan struct{})
			callers   sync.WaitGroup
		)
		for a := range agents {
			callers.Go(func() {
				for ctx.Err() == nil {
					out, err := queue.Next(ctx, env, queue.NextInput{AgentID: fmt.Sprintf("agent-%d", a)})
					if ctx.Err() != nil {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					if out.Instruction == nil {
						continue
					}
					mu.Lock()
					delivered[out.Instruction.Content]++
					if len(delivered) == adders*perAdder {
						close(all)
					}
					mu.Unlock()
				}
			})
		}
		var producers sync.WaitGroup
		for p := range adders {
			producers.Go(func() {
				// One at a time and in batches, so claims meet adds of
				// both shapes.
				for i := 0; i < perAdder; {
					in := queue.AddInput{}
					for n := 1 + i%7; n > 0 && i < perAdder; n-- {
						in.Contents = append(in.Contents, fmt.Sprintf("p%d-%d", p, i))
						i++
					}
					if _, err := queue.Add(context.Background(), env, in); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		producers.Wait()
		select {
		case <-all:
		case <-time.After(60 * time.Second):
			t.Error("not every instruction was delivered within 60s")
		}
		stop()
		callers.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(delivered) != adders*perAdder {
			t.Errorf("%d distinct instructions delivered, want %d", len(delivered), adders*perAdder)
		}
		for content, n := range delivered {
			if n != 1 {
				t.Errorf("%s delivered %d times", content, n)
			}
		}
		s, err := queue.Status(context.Background(), env, queue.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Queue.PendingCount != 0 || s.Queue.ConsumedCount != adders*perAdder {
			t.Errorf("the store counts %d pending and %d consumed, want 0 and %d", s.Queue.PendingCount, s.Queue.ConsumedCount, adders*perAdder)
		}
	})
}

// On the local store an instruction added while a call waits reaches it in
// the commit that stores it: the add and the delivery share one durable
// commit, rather than the delivery taking a second one after it.
func TestAnAddReachesAWaitingCallInTheCommitThatStoresIt(t *testing.T) {
	env := testkit.Env(t)
	setWait(t, env, 60)
	ctx := context.Background()
	got := waiting(t, env, "agent")
	before := commits(t, env)
	if _, err := queue.Add(ctx, env, queue.AddInput{Contents: []string{"work"}}); err != nil {
		t.Fatal(err)
	}
	if content := received(t, "agent", got); content != "work" {
		t.Fatalf("got %q", content)
	}
	if n := commits(t, env) - before; n != 1 {
		t.Errorf("the add and its delivery took %d commits, want 1", n)
	}
}

// A call answered soon after it came writes nothing of its own: the queue
// records an agent waiting only once its call has waited a while, so a
// delivery to agents that keep up is the add's commit alone, not that and
// a commit saying the agent waits.
func TestACallAnsweredSoonWritesNoWaitingRecord(t *testing.T) {
	env := testkit.Env(t)
	setWait(t, env, 60)
	ctx := context.Background()
	before := commits(t, env)
	const calls = 20
	for i := range calls {
		got := make(chan queue.NextOutput, 1)
		go func() {
			out, err := queue.Next(ctx, env, queue.NextInput{AgentID: "agent"})
			if err != nil {
				t.Error(err)
			}
			got <- out
		}()
		// Time for the call's first look, well before it counts as waiting.
		time.Sleep(5 * time.Millisecond)
		if _, err := queue.Add(ctx, env, queue.AddInput{Contents: []string{fmt.Sprint(i)}}); err != nil {
			t.Fatal(err)
		}
		if content := received(t, "agent", got); content != fmt.Sprint(i) {
			t.Fatalf("call %d got %q", i, content)
		}
	}
	// A few calls may wait long enough on a busy machine to be recorded.
	if n := commits(t, env) - before; n > calls*3/2 {
		t.Errorf("%d calls answered within milliseconds made %d commits, want about one each", calls, n)
	}
}

// commits is the id of the store's latest transaction: the count of its
// commits.
func commits(t *testing.T, env *op.Env) int {
	t.Helper()
	var id int
	if err := env.Store.View(context.Background(), func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

// A call whose record as waiting failed because another process held the
// store past the lock timeout is recorded once the store is free again,
// although nothing changed meanwhile: the lock coming free signals nothing.
func TestACallIsRecordedWaitingAfterTheLockWasHeldElsewhere(t *testing.T) {
	env := testkit.Env(t)
	setWait(t, env, 60)
	env.Store.LockTimeout = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	looked := make(chan struct{}, 1)
	env.Progress = func(float64, float64, string) {
		select {
		case looked <- struct{}{}:
		default:
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		queue.Next(ctx, env, queue.NextInput{AgentID: "held-out"})
	}()
	defer func() { cancel(); <-done }()
	select {
	case <-looked:
	case <-time.After(10 * time.Second):
		t.Fatal("no first look")
	}
	// Another process holds the store while the call would be recorded.
	fd, err := syscall.Open(env.Store.LockPath(), syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(fd, syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * env.Store.LockTimeout)
	syscall.Close(fd)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		s, _ := queue.Status(context.Background(), env, queue.Empty{})
		for _, a := range s.Agents {
			if a.AgentID == "held-out" && a.Waiting {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Error("the call was never recorded waiting once the store was free")
}
