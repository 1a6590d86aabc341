package queue

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/store"
)

// A claimer hands the pending instructions of one queue to the
// get_user_request calls of this process that wait on it, the call that has
// waited longest first. One transaction per change claims as many
// instructions as calls wait and records the first look of each call that
// just came: with N calls waiting, an added instruction costs one claim,
// not N racing for it. Across processes nothing changes: each has its own
// claimer, and the storage's transactions keep claims exclusive.
type claimer struct {
	mu      sync.Mutex
	waiters []*waiter // oldest first
	running bool      // the loop runs; it ends once no call waits
	failed  time.Time // when the last look failed; zero when it did not
	// kick wakes the loop for a call that came, or for the last that left.
	kick chan struct{}

	// On a storage whose writes in this process share transactions, a
	// pass runs last in each of them (see trailing), set up once.
	trailer sync.Once
	// passes counts the passes that ran there.
	passes atomic.Uint64
}

// A trailing storage runs fn last in every write transaction this process
// commits on it, after the writes it shares: the local store, whose Batch
// gathers them. done hears how each transaction ended (see
// store.AfterWrites).
type trailing interface {
	AfterWrites(fn func(Tx) error, done func(error))
	// SeenByTrailers says whether fn ran after the latest change any
	// process made, or in the transaction that made it.
	SeenByTrailers() bool
}

// claimers holds the one claimer of each queue this process waits on, by
// where the queue is: a database's URL or a store file's path.
var claimers sync.Map // string -> *claimer

func claimerOf(ctx context.Context, env *op.Env) (*claimer, error) {
	if _, err := storage(ctx, env); err != nil {
		return nil, err
	}
	where := env.Queue
	if where == "" {
		where = env.Store.Path
	}
	c, _ := claimers.LoadOrStore(where, &claimer{kick: make(chan struct{}, 1)})
	return c.(*claimer), nil
}

// A waiter is one get_user_request call waiting on a claimer.
type waiter struct {
	ctx   context.Context
	env   *op.Env
	agent string
	start time.Time
	// calls numbers the agent's calls; gen is this call's number: a newer
	// call supersedes this one (see generations).
	calls *atomic.Uint64
	gen   uint64

	// looked is closed after the call's first look, which set settings
	// and deadline.
	looked   chan struct{}
	settings Settings
	deadline time.Time
	// answer receives the call's outcome, once.
	answer chan answer

	// Guarded by the claimer's mu.
	seen     bool // the first look happened
	recorded bool // the queue records its agent waiting
	inRound  bool // in the transaction running now
	leaving  bool // its call left while it was in a round
	// joined is when it came, by this process's clock: the queue records
	// its agent waiting once it has waited recordWaitingAfter.
	joined time.Time
}

// recordWaitingAfter is how long a call waits before the queue records its
// agent waiting (the page's agents, lm queue status). With agents taking
// instructions as fast as they come, a call waits a few milliseconds, and
// recording each of those waits was a durable commit of its own for news
// no person could see: with 50 agents and adds over HTTP, a third of the
// gateway's commits.
const recordWaitingAfter = 50 * time.Millisecond

// confirms says whether the call's face tells when its reply reached the
// agent (lm mcp, the command line). One that cannot tell would acknowledge
// a delivery at once, before its reply is written; recording it
// acknowledged in the claim's own commit says the same and spares a
// commit on every delivery's way out.
func (w *waiter) confirms() bool { return w.env.AfterReply != nil }

// answer is how a waiting call ends: an instruction delivered, an error,
// or neither (superseded, or it left with nothing).
type answer struct {
	out *NextOutput
	err error
}

func (c *claimer) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// join adds w behind the calls already waiting and has the loop look for
// it.
func (c *claimer) join(w *waiter) {
	c.mu.Lock()
	w.joined = time.Now()
	c.waiters = append(c.waiters, w)
	start := !c.running
	c.running = true
	c.mu.Unlock()
	if start {
		go c.run(w.env)
		return
	}
	c.poke()
}

// leave takes w out of the waiting calls and returns its answer: the one a
// round gave it already, the one the round in progress gives it, or
// nothing.
func (c *claimer) leave(w *waiter) answer {
	c.mu.Lock()
	if w.inRound {
		w.leaving = true
		c.mu.Unlock()
		return <-w.answer
	}
	last := c.remove(w) && len(c.waiters) == 0
	c.mu.Unlock()
	if last {
		c.poke() // so the loop ends
	}
	select {
	case a := <-w.answer:
		return a
	default:
		return answer{}
	}
}

// remove takes w out of the waiting calls; c.mu is held.
func (c *claimer) remove(w *waiter) bool {
	i := slices.Index(c.waiters, w)
	if i < 0 {
		return false
	}
	c.waiters = slices.Delete(c.waiters, i, i+1)
	return true
}

// run looks at the queue for the waiting calls after every change and
// every call that comes, until none waits. It subscribes before its first
// look, so a change committed between a look and the wait that follows
// still wakes it.
func (c *claimer) run(env *op.Env) {
	changes, unsubscribe, err := Changes(context.Background(), env)
	if err != nil {
		c.mu.Lock()
		for _, w := range c.waiters {
			w.answer <- answer{err: err}
		}
		c.waiters, c.running = nil, false
		c.mu.Unlock()
		return
	}
	defer unsubscribe()
	look, news := c.looker(env)
	// While looks fail, a call not yet recorded waiting is tried again
	// after the lock timeout (see nextRecord).
	retry := env.Store.LockTimeout
	if retry <= 0 {
		retry = store.DefaultLockTimeout
	}
	for {
		// The calls the last round answered in this process are ready
		// to run: letting them come back first puts them in this round
		// rather than the next one, after this one's commit. It comes
		// before the look at who waits, so a round does not start for
		// calls that left meanwhile.
		runtime.Gosched()
		c.mu.Lock()
		if len(c.waiters) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		look()
		c.await(changes, news, retry)
	}
}

// await returns once a call came or left, the queue changed in a way no
// look has seen yet, or a call has waited long enough to be recorded.
func (c *claimer) await(changes <-chan struct{}, news func() bool, retry time.Duration) {
	var record <-chan time.Time
	if at, ok := c.nextRecord(retry); ok {
		timer := time.NewTimer(time.Until(at))
		defer timer.Stop()
		record = timer.C
	}
	for {
		select {
		case <-changes:
			if news() {
				return
			}
		case <-c.kick:
			return
		case <-record:
			return
		}
	}
}

// nextRecord is when the first call still unrecorded will have waited
// recordWaitingAfter, or, while looks fail, retry after the last failure.
func (c *claimer) nextRecord(retry time.Duration) (at time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.waiters {
		if w.recorded {
			continue
		}
		if due := w.joined.Add(recordWaitingAfter); !ok || due.Before(at) {
			at, ok = due, true
		}
	}
	if ok && !c.failed.IsZero() {
		// Looking again at once would only fail again, but waiting for
		// the watch is not enough: a lock another process held past the
		// timeout, or space freed on a full disk, comes back without a
		// commit to signal it, and the call would never be recorded.
		if again := c.failed.Add(retry); again.After(at) {
			at = again
		}
	}
	return at, ok
}

// looker is how the loop looks at the queue for the waiting calls, and
// whether a change signalled is news to it. Where the storage's writes
// share transactions, the look is a pass at the end of every one of them,
// whoever's writes it holds: an instruction added over HTTP goes to a
// waiting call in the commit that stores it, and the signal of that commit
// is no news. The loop then only makes sure a transaction happens, for the
// calls that came and for changes made elsewhere. Elsewhere, a look is a
// round of its own, and every change is news.
func (c *claimer) looker(env *op.Env) (looks func(), news func() bool) {
	s, err := storage(context.Background(), env)
	tr, ok := s.(trailing)
	if err != nil || !ok {
		return func() {
			ws, looks, err := round(env, c.gather)
			c.settle(ws, looks, err)
		}, func() bool { return true }
	}
	c.trailer.Do(func() {
		p := &pass{gather: c.gather}
		run := inTx(env, p.run)
		tr.AfterWrites(func(t Tx) error {
			// What an earlier transaction's pass found is settled:
			// this one starts afresh, even if it fails before looking.
			*p = pass{gather: c.gather}
			if !c.waiting() {
				return nil
			}
			return run(t)
		}, func(err error) { c.passed(p, err) })
	})
	looks = func() {
		before := c.passes.Load()
		ctx, cancel := context.WithTimeout(context.Background(), 2*env.Store.LockTimeout)
		defer cancel()
		err := update(ctx, env, func(*tx) error { return nil })
		if err != nil && c.passes.Load() == before {
			// No pass ran (the lock, the file): the error is every
			// waiting call's, as in a round.
			ws := c.gather()
			c.settle(ws, make([]look, len(ws)), err)
		}
	}
	return looks, func() bool { return !tr.SeenByTrailers() }
}

// waiting says whether any call waits.
func (c *claimer) waiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters) > 0
}

// passed settles what a pass in a shared transaction found, once that
// transaction is over. A pass whose writes were rolled back — a caller
// gave up, or the writes it followed all failed — settles nothing: its
// calls wait on, and the loop looks again.
func (c *claimer) passed(p *pass, err error) {
	c.passes.Add(1)
	if p.gaveUp || errors.Is(err, store.ErrRolledBack) {
		c.release(p.ws)
		c.poke()
		return
	}
	if err != nil && p.ws == nil {
		p.ws = c.gather()
		p.looks = make([]look, len(p.ws))
	}
	c.settle(p.ws, p.looks, err)
}

// release takes the calls of a pass that settled nothing out of it: those
// whose callers left meanwhile leave with nothing.
func (c *claimer) release(ws []*waiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range ws {
		w.inRound = false
		if w.leaving && c.remove(w) {
			w.answer <- answer{}
		}
	}
}

// look is what a round found for one waiting call.
type look struct {
	// settings and deadline are set at the call's first look.
	settings Settings
	deadline time.Time
	out      *NextOutput // the instruction handed to it
	passed   bool        // superseded or gone: it takes nothing
	recorded bool        // its agent recorded waiting
}

// gather takes the calls waiting now into the round being made, oldest
// first. It runs inside the round's transaction, not before it: a round
// waits for the commit in progress, often as long as the agents take to
// come back with their next call, and those that come meanwhile are in it
// instead of waiting for the next round and its commit. A call in a round
// stays in the waiting list until settled, so when the transaction runs
// again the calls gathered are those of the run before and any that came
// since, in the same order.
func (c *claimer) gather() []*waiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	ws := slices.Clone(c.waiters)
	for _, w := range ws {
		w.inRound = true
	}
	return ws
}

// round runs one transaction over the calls gather gives when it runs
// (see pass), again while a caller gave up while it ran. It returns the
// calls it settled on with what it found for each.
func round(env *op.Env, gather func() []*waiter) ([]*waiter, []look, error) {
	for {
		p := &pass{gather: gather}
		// The store's own lock timeout ends a wait on a lock held
		// elsewhere (unavailable: the calls keep waiting); this bounds
		// a database that does not answer at all.
		ctx, cancel := context.WithTimeout(context.Background(), 2*env.Store.LockTimeout)
		err := update(ctx, env, p.run)
		cancel()
		if err != nil && p.ws == nil {
			// The transaction failed before it ran (the lock, the
			// file): the error is every waiting call's.
			p.ws = gather()
			p.looks = make([]look, len(p.ws))
		}
		if !p.gaveUp {
			return p.ws, p.looks, err
		}
	}
}

// A pass is a round's look at the queue inside one transaction, over the
// calls gather gives, oldest first: each call still wanted — not
// superseded, its caller still there — gets the head of the queue while
// there is one, consumed for its agent; a call that gets none is recorded
// as waiting once it has waited recordWaitingAfter. A caller that goes away before the commit
// takes nothing: the pass fails with gaveUp, so that the transaction is
// rolled back and the round looks again without it.
type pass struct {
	gather func() []*waiter
	// Set afresh by each run, as a transaction may run more than once.
	ws     []*waiter
	looks  []look
	gaveUp bool
}

func (p *pass) run(t *tx) error {
	p.ws = p.gather()
	p.looks = make([]look, len(p.ws))
	p.gaveUp = false
	if len(p.ws) == 0 {
		return nil
	}
	settings := t.settings()
	wait := time.Duration(min(max(settings.DefaultWaitSeconds, 0), MaxWaitSeconds)) * time.Second
	wanted := 0
	for i, w := range p.ws {
		if w.calls.Load() != w.gen || w.ctx.Err() != nil {
			p.looks[i].passed = true
		} else {
			wanted++
		}
	}
	// One claim for the whole round, handed out oldest call first.
	claimed := t.Claim(wanted)
	for i, w := range p.ws {
		l := &p.looks[i]
		if !w.seen {
			l.settings, l.deadline = settings, w.start.Add(wait)
		}
		if l.passed {
			continue
		}
		if len(claimed) > 0 {
			out, err := t.hand(claimed[0], w.agent, w.confirms())
			if err != nil {
				return err
			}
			claimed = claimed[1:]
			l.out = &out
			continue
		}
		if !w.recorded && time.Since(w.joined) >= recordWaitingAfter {
			deadline := w.deadline
			if !w.seen {
				deadline = l.deadline
			}
			if err := t.waiting(w.agent, deadline); err != nil {
				return err
			}
			l.recorded = true
		}
	}
	// A caller that gave up while we worked must not get an instruction
	// it will never see: roll back, and look again without it.
	for i, w := range p.ws {
		if err := w.ctx.Err(); err != nil && p.looks[i].out != nil {
			p.gaveUp = true
			return err
		}
	}
	return nil
}

// settle gives each call of a round what the round found: its first look,
// its answer (an instruction, nothing because it was passed over or left,
// an error), or, for a call still waiting, nothing yet.
func (c *claimer) settle(ws []*waiter, looks []look, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed = time.Time{}
	if err != nil {
		c.failed = time.Now()
	}
	for i, w := range ws {
		w.inRound = false
		var a *answer
		switch {
		case err != nil && (!w.seen || op.KindOf(err) != op.KindUnavailable):
			a = &answer{err: err}
		case err != nil:
			// The store went away while the call waited (a database
			// restarting): it keeps waiting. The watch signals again
			// once the store is back, and the next round finds what was
			// added meanwhile.
		default:
			l := looks[i]
			if !w.seen {
				w.settings, w.deadline, w.seen = l.settings, l.deadline, true
				close(w.looked)
			}
			w.recorded = w.recorded || l.recorded
			if l.out != nil {
				a = &answer{out: l.out}
			} else if l.passed {
				a = &answer{}
			}
		}
		if a == nil && w.leaving {
			a = &answer{}
		}
		// A call is answered once, by whoever takes it out of the
		// waiting calls.
		if a != nil && c.remove(w) {
			w.answer <- *a
		}
	}
}

// hand consumes r for agent and records the delivery: the agent's record,
// and the events a page shows. With unconfirmed the instruction awaits its
// acknowledgement (see consume).
func (t *tx) hand(r Record, agent string, unconfirmed bool) (NextOutput, error) {
	r, err := t.consume(r, agent, unconfirmed)
	if err != nil {
		return NextOutput{}, err
	}
	// A delivery sets every field of the agent's record: nothing stored
	// needs reading first.
	a := Agent{AgentID: agent, LastSeenAt: t.now, LastFetchAt: &t.now, LastResultType: ResultInstruction}
	if err := t.PutAgent(a); err != nil {
		return NextOutput{}, err
	}
	if err := t.emit(EventConsumed, r.instruction(0)); err != nil {
		return NextOutput{}, err
	}
	if err := t.emitAgent(a); err != nil {
		return NextOutput{}, err
	}
	return NextOutput{Status: "ok", ResultType: ResultInstruction,
		Instruction:      &Delivered{ID: r.ID, Content: r.Content, ConsumedAt: *r.ConsumedAt},
		RemainingPending: pendingCount(t)}, nil
}

// waiting records that agent waits until deadline.
func (t *tx) waiting(agent string, deadline time.Time) error {
	a, _ := t.Agent(agent)
	a.AgentID, a.LastSeenAt, a.WaitingUntil = agent, t.now, &deadline
	if err := t.PutAgent(a); err != nil {
		return err
	}
	return t.emitAgent(a)
}
