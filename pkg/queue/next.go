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
// response. A cancelled or superseded call consumes nothing.
func Next(ctx context.Context, env *op.Env, in NextInput) (NextOutput, error) {
	agent := op.AgentID(in.AgentID, env.Caller.Name, env.Client)
	start := env.Now()
	current, gen := nextGeneration(agent)

	// Subscribe before the first look at the queue so that an instruction
	// added between the look and the wait still wakes us.
	changes, unsubscribe, err := Changes(ctx, env)
	if err != nil {
		return NextOutput{}, err
	}
	defer unsubscribe()

	var (
		out      NextOutput
		settings Settings
		first    = true
		deadline time.Time
	)
	claim := func() (bool, error) {
		claimed := false
		err := update(ctx, env, func(t *tx) error {
			claimed = false
			if first {
				settings = t.settings()
				wait := time.Duration(min(max(settings.DefaultWaitSeconds, 0), MaxWaitSeconds)) * time.Second
				deadline = start.Add(wait)
			}
			if current.Load() != gen {
				return nil // superseded: take nothing
			}
			if r, ok := t.Claim(); ok {
				r, err := t.consume(r, agent)
				if err != nil {
					return err
				}
				// A delivery sets every field of the agent's record:
				// nothing stored needs reading first.
				a := Agent{AgentID: agent, LastSeenAt: t.now, LastFetchAt: &t.now, LastResultType: ResultInstruction}
				if err := t.PutAgent(a); err != nil {
					return err
				}
				if err := t.emit(EventConsumed, r.instruction(0)); err != nil {
					return err
				}
				if err := t.emitAgent(a); err != nil {
					return err
				}
				out = NextOutput{Status: "ok", ResultType: ResultInstruction,
					Instruction:      &Delivered{ID: r.ID, Content: r.Content, ConsumedAt: *r.ConsumedAt},
					RemainingPending: pendingCount(t)}
				claimed = true
				// A client that gave up while we committed must not get
				// an instruction it will never see: roll back.
				return ctx.Err()
			}
			if !first {
				return nil
			}
			a, _ := t.Agent(agent)
			a.AgentID, a.LastSeenAt, a.WaitingUntil = agent, t.now, &deadline
			if err := t.PutAgent(a); err != nil {
				return err
			}
			return t.emitAgent(a)
		})
		first = false
		return claimed && err == nil, err
	}

	// Progress is reported only to a caller that asked for it: a ticker
	// nobody listens to would wake the wait for nothing.
	var progress <-chan time.Time
	waiting := "" // what the wait says it does, once it starts
	if env.Progress != nil {
		ticker := time.NewTicker(progressEvery)
		defer ticker.Stop()
		progress = ticker.C
	}
	for {
		ok, err := claim()
		if err != nil && waiting != "" && op.KindOf(err) == op.KindUnavailable {
			// The store went away while we waited (a database
			// restarting): keep waiting. Its watch signals again once it
			// is back, and the next look finds what was added meanwhile.
			err = nil
		}
		if err != nil {
			finish(env, agent, "", false)
			return NextOutput{}, err
		}
		if ok {
			out.WaitedSeconds = seconds(env.Now().Sub(start))
			id := out.Instruction.ID
			env.WhenDelivered(id, func() { acknowledge(env, id) })
			return out, nil
		}
		if current.Load() != gen || !env.Now().Before(deadline) {
			break
		}
		if waiting == "" {
			waiting = fmt.Sprintf("waiting up to %s for an instruction", deadline.Sub(start).Round(time.Second))
			env.ReportProgress(0, deadline.Sub(start).Seconds(), waiting)
		}
		timer := time.NewTimer(deadline.Sub(env.Now()))
		select {
		case <-changes:
		case <-timer.C:
		case <-progress:
			waited := env.Now().Sub(start)
			env.ReportProgress(waited.Seconds(), deadline.Sub(start).Seconds(), waiting)
		case <-ctx.Done():
			timer.Stop()
			finish(env, agent, "", false)
			return NextOutput{}, op.Errorf(op.KindTimeout, "get_user_request cancelled while waiting: %w", ctx.Err())
		}
		timer.Stop()
	}

	result := ResultEmpty
	response := settings.DefaultEmptyResponse
	if response != "" {
		result = ResultDefaultResponse
	}
	remaining := finish(env, agent, result, true)
	return NextOutput{Status: "ok", ResultType: result, Response: &response,
		RemainingPending: remaining, WaitedSeconds: seconds(env.Now().Sub(start))}, nil
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

func pendingCount(t *tx) int {
	n, _ := t.Counts()
	return n
}

func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }
