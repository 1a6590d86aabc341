package queue

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"lmtool.dev/lm/pkg/op"
)

// NextInput is get_user_request's input. The wait is deliberately not an
// input: it is the user's setting, not the agent's.
type NextInput struct {
	AgentID string `json:"agent_id,omitempty" jsonschema:"who is asking; defaults to the MCP client's name"`
}

// Delivered is the instruction handed to an agent.
type Delivered struct {
	ID         string    `json:"id"`
	Content    string    `json:"content"`
	ConsumedAt time.Time `json:"consumed_at"`
}

// NextOutput is one of get_user_request's three result shapes.
type NextOutput struct {
	Status           string     `json:"status" jsonschema:"always ok"`
	ResultType       string     `json:"result_type" jsonschema:"instruction, empty or default_response"`
	Instruction      *Delivered `json:"instruction" jsonschema:"the delivered instruction; null when none was"`
	Response         *string    `json:"response,omitempty" jsonschema:"with empty or default_response: the text for the agent"`
	RemainingPending int        `json:"remaining_pending"`
	WaitedSeconds    float64    `json:"waited_seconds"`
}

// ExitCode makes `lm queue next` exit 7 when its wait ended empty, so
// `while lm queue next; do …; done` loops while instructions come.
func (o NextOutput) ExitCode() int {
	if o.ResultType == ResultInstruction {
		return 0
	}
	return op.KindTimeout.ExitCode()
}

// progressEvery is how often a waiting call reports progress.
const progressEvery = 2 * time.Second

// generations numbers each agent's calls within this process: a newer call
// from the same agent supersedes an older one still waiting, so a call its
// client abandoned cannot take an instruction meant for the next one.
var generations sync.Map // agent id -> *atomic.Uint64

func nextGeneration(agent string) (current *atomic.Uint64, mine uint64) {
	g, _ := generations.LoadOrStore(agent, new(atomic.Uint64))
	current = g.(*atomic.Uint64)
	return current, current.Add(1)
}

// Next is get_user_request: deliver the oldest pending instruction, marking
// it consumed in the same transaction that claims it; if there is none, wait
// up to the configured time for one, then answer empty or with the default
// response. The process's claimer for the queue makes the claims (see
// claimer): waiting calls get instructions in the order they came. A
// cancelled or superseded call consumes nothing.
func Next(ctx context.Context, env *op.Env, in NextInput) (NextOutput, error) {
	c, err := claimerOf(ctx, env)
	if err != nil {
		return NextOutput{}, err
	}
	w := &waiter{ctx: ctx, env: env, agent: op.AgentID(in.AgentID, env.Caller.Name, env.Client), start: env.Now(),
		looked: make(chan struct{}), answer: make(chan answer, 1)}
	w.calls, w.gen = nextGeneration(w.agent)
	c.join(w)
	select {
	case a := <-w.answer:
		return w.end(a)
	case <-ctx.Done():
		return w.end(c.leave(w))
	case <-w.looked:
	}

	// Progress is reported only to a caller that asked for it: a ticker
	// nobody listens to would wake the wait for nothing.
	var progress <-chan time.Time
	if env.Progress != nil {
		ticker := time.NewTicker(progressEvery)
		defer ticker.Stop()
		progress = ticker.C
	}
	wait := w.deadline.Sub(w.start)
	waiting := fmt.Sprintf("waiting up to %s for an instruction", wait.Round(time.Second))
	if env.Now().Before(w.deadline) {
		env.ReportProgress(0, wait.Seconds(), waiting)
	}
	timer := time.NewTimer(w.deadline.Sub(env.Now()))
	defer timer.Stop()
	for {
		select {
		case a := <-w.answer:
			return w.end(a)
		case <-timer.C:
			return w.end(c.leave(w))
		case <-ctx.Done():
			return w.end(c.leave(w))
		case <-progress:
			env.ReportProgress(env.Now().Sub(w.start).Seconds(), wait.Seconds(), waiting)
		}
	}
}

// end turns a waiting call's answer into get_user_request's result.
func (w *waiter) end(a answer) (NextOutput, error) {
	env := w.env
	switch {
	case a.err != nil:
		finish(env, w.agent, "", false)
		return NextOutput{}, a.err
	case a.out != nil:
		out := *a.out
		out.WaitedSeconds = seconds(env.Now().Sub(w.start))
		if w.confirms() {
			id := out.Instruction.ID
			env.AfterReply(id, func() { acknowledge(env, id) })
		}
		return out, nil
	case w.ctx.Err() != nil:
		finish(env, w.agent, "", false)
		return NextOutput{}, op.Errorf(op.KindTimeout, "get_user_request cancelled while waiting: %w", w.ctx.Err())
	}
	result := ResultEmpty
	response := w.settings.DefaultEmptyResponse
	if response != "" {
		result = ResultDefaultResponse
	}
	var remaining int
	if w.calls.Load() != w.gen {
		// A newer call of the agent's took over: the agent's record is
		// that call's, waiting, and stays so.
		remaining = pendingNow(env)
	} else {
		remaining = finish(env, w.agent, result, true)
	}
	return NextOutput{Status: "ok", ResultType: result, Response: &response,
		RemainingPending: remaining, WaitedSeconds: seconds(env.Now().Sub(w.start))}, nil
}

// finish records the end of a call that delivered nothing and returns the
// pending count. It runs even when the call's context is cancelled, so the
// agent panel never shows a dead call as waiting.
func finish(env *op.Env, agent, result string, fetched bool) int {
	ctx, cancel := context.WithTimeout(context.Background(), env.Store.LockTimeout)
	defer cancel()
	pending := 0
	update(ctx, env, func(t *tx) error {
		a, _ := t.Agent(agent)
		a.AgentID, a.LastSeenAt, a.WaitingUntil = agent, t.now, nil
		if fetched {
			a.LastFetchAt, a.LastResultType = &t.now, result
		}
		pending = pendingCount(t)
		if err := t.PutAgent(a); err != nil {
			return err
		}
		return t.emitAgent(a)
	})
	return pending
}

// pendingNow reads the pending count.
func pendingNow(env *op.Env) int {
	ctx, cancel := context.WithTimeout(context.Background(), env.Store.LockTimeout)
	defer cancel()
	pending := 0
	view(ctx, env, func(t *tx) error {
		pending = pendingCount(t)
		return nil
	})
	return pending
}

func pendingCount(t *tx) int {
	n, _ := t.Counts()
	return n
}

func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }
