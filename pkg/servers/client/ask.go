package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/model"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers"
	"lmtool.dev/lm/pkg/table"
)

// DefaultMaxSteps bounds the calls one request may run.
const DefaultMaxSteps = 5

// resultLimit bounds the result text the model is shown after a call.
const resultLimit = 16 << 10

// AskInput is a request in natural language to one server.
type AskInput struct {
	TargetInput
	Request  string    `json:"request,omitempty" jsonschema:"what to do, in natural language"`
	Yes      bool      `json:"yes,omitempty" jsonschema:"run every proposed call without asking (recorded as auto in the history); command line only"`
	DryRun   bool      `json:"dry_run,omitempty" jsonschema:"only show the first proposed call; run nothing"`
	MaxSteps int       `json:"max_steps,omitempty" jsonschema:"run at most this many calls for the request (default 5)"`
	Previous []AskTurn `json:"previous,omitempty" jsonschema:"earlier requests to the same server and what became of them, oldest first: the model reads the request as their follow-up"`
}

// AskTurn is an earlier request of a conversation and what became of it —
// the calls proposed, their approval and results, the model's answer — so
// a follow-up is read against it.
type AskTurn struct {
	Request string    `json:"request"`
	Steps   []AskStep `json:"steps,omitempty"`
	Answer  string    `json:"answer,omitempty"`
}

// The ways a request ends.
const (
	StoppedDone     = "done"      // the model answered
	StoppedMaxSteps = "max_steps" // the step budget ran out; the answer is the model's summary
	StoppedRejected = "rejected"  // the person rejected a call
	StoppedDryRun   = "dry_run"   // the proposal was only shown
	StoppedFailed   = "failed"    // a call or the model failed
)

// AskOutput is what a request did.
type AskOutput struct {
	Request    string    `json:"request"`
	Steps      []AskStep `json:"steps"`
	Answer     string    `json:"answer,omitempty" jsonschema:"the model's final answer, or its summary when the steps ran out (the last call's result when it gave none)"`
	Stopped    string    `json:"stopped" jsonschema:"why the request ended: done, max_steps, rejected, dry_run or failed"`
	Error      string    `json:"error,omitempty" jsonschema:"with failed: what failed"`
	TokensUsed int       `json:"tokens_used" jsonschema:"the model's tokens over every attempt"`

	exit int
}

// ExitCode is the failure's exit code when the request failed midway, so
// the steps that ran are still printed.
func (o AskOutput) ExitCode() int { return o.exit }

// AskStep is one proposed call and what became of it.
type AskStep struct {
	Proposal Proposal `json:"proposal"`
	Approval string   `json:"approval" jsonschema:"approved, edited, approved_rest, auto (--yes), rejected or proposed (dry run)"`
	// Arguments are the ones the call ran with when a person edited them.
	Arguments  map[string]any `json:"arguments,omitempty" jsonschema:"the arguments the call ran with, when they were edited"`
	Result     any            `json:"result,omitempty"`
	Error      string         `json:"error,omitempty" jsonschema:"the call's error; a tool's error is shown to the model"`
	HistoryID  string         `json:"history_id,omitempty"`
	DurationMS int64          `json:"duration_ms,omitempty"`
}

// Ask turns a request into tool calls: the model proposes one call at a
// time from the server's tools, a person approves each (or --yes, or
// --dry-run only shows), and the model sees each result until it answers or
// the steps run out.
func Ask(ctx context.Context, env *op.Env, in AskInput) (AskOutput, error) {
	if err := shift(env, &in.TargetInput, &in.Request); err != nil {
		return AskOutput{}, err
	}
	if err := loneRequest(env, &in); err != nil {
		return AskOutput{}, err
	}
	if strings.TrimSpace(in.Request) == "" {
		return AskOutput{}, op.Errorf(op.KindInvalid, "no request given").
			WithHint(`for example: lm servers ask NAME "add 2 and 3"`)
	}
	if in.MaxSteps < 0 {
		return AskOutput{}, op.Errorf(op.KindInvalid, "--max-steps must be positive, got %d", in.MaxSteps)
	}
	if in.MaxSteps == 0 {
		in.MaxSteps = DefaultMaxSteps
	}
	if in.Yes && in.DryRun {
		return AskOutput{}, op.Errorf(op.KindInvalid, "--yes and --dry-run contradict each other").
			WithHint("--dry-run only shows the proposed call; --yes runs every one")
	}
	llm, err := askModel(env)
	if err != nil {
		return AskOutput{}, err
	}
	gate, err := newApprover(env, in)
	if err != nil {
		return AskOutput{}, err
	}
	s, err := open(ctx, env, in.TargetInput)
	if err != nil {
		return AskOutput{}, err
	}
	defer s.Close()
	tools, err := s.Tools(ctx)
	if err != nil {
		return AskOutput{}, err
	}
	if env.Caller.Terminal {
		showSummary(env.Stderr, s.target, s.Initialized(), tools)
	}
	hbCtx, stopHeartbeat := context.WithCancel(ctx)
	defer stopHeartbeat()
	go s.Heartbeat(hbCtx)

	c := &conversation{env: env, session: s, llm: llm, gate: gate, tools: map[string]mcp.Tool{}, maxSteps: in.MaxSteps,
		out: AskOutput{Request: in.Request, Steps: []AskStep{}}}
	for _, t := range tools {
		c.tools[t.Name] = t
	}
	c.messages = []model.Message{{Role: "system", Content: systemPrompt(s.target, tools)}}
	for _, turn := range in.Previous {
		c.replay(turn)
	}
	c.messages = append(c.messages, model.Message{Role: "user", Content: in.Request})
	return c.run(ctx)
}

// loneRequest reads `lm servers ask WORDS` with one argument: a configured
// server's name stays the server (and the request is missing); anything
// else is the request, to the one configured server if there is only one.
func loneRequest(env *op.Env, in *AskInput) error {
	if !env.Caller.Terminal || in.Request != "" || in.URL != "" || len(in.Command) > 0 {
		return nil
	}
	names, err := servers.Names(env.Home)
	if err != nil {
		return err
	}
	if in.Server != "" && slices.Contains(names, in.Server) {
		return nil
	}
	in.Request, in.Server = in.Server, ""
	if len(names) == 1 {
		in.Server = names[0]
	}
	if in.Request != "" && !in.given() {
		return noServerGiven(env)
	}
	return nil
}

// askModel is the configured model, or an error naming the setting to add.
func askModel(env *op.Env) (*model.Client, error) {
	cfg, err := model.Load(env.Home, env.LookupEnv)
	if err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, op.Errorf(op.KindUnavailable, "no model is configured, and one is needed to turn the request into tool calls").
			WithCategory(model.CategoryNotConfigured).
			WithHint(`add a [model] table with model = "NAME" (and url = "http://…") to %s, or set LM_MODEL (and LM_MODEL_URL)`, model.ConfigPath(env.Home))
	}
	return model.New(cfg)
}

// conversation is one request's exchange with the model.
type conversation struct {
	env      *op.Env
	session  *Session
	llm      *model.Client
	gate     *approver
	tools    map[string]mcp.Tool
	maxSteps int
	messages []model.Message
	out      AskOutput
}

// run asks for proposals and runs the approved ones until the model is
// done, a call is rejected or the steps run out.
func (c *conversation) run(ctx context.Context) (AskOutput, error) {
	for ran := 0; ran < c.maxSteps; ran++ {
		p, err := c.propose(ctx, false)
		if err != nil {
			return c.fail(err)
		}
		if p.Action == ActionDone {
			c.out.Answer, c.out.Stopped = p.Answer, StoppedDone
			return c.out, nil
		}
		tool := c.tools[p.Tool]
		showProposal(c.env.Stderr, p, len(c.out.Steps)+1, c.maxSteps)
		verdict, args, err := c.gate.decide(ctx, tool, p)
		if err != nil {
			return c.fail(err)
		}
		step := AskStep{Proposal: p, Approval: verdict}
		if verdict == VerdictEdited {
			step.Arguments = args
			c.messages = append(c.messages, editedMessage(args))
		}
		switch verdict {
		case VerdictProposed:
			c.out.Steps, c.out.Stopped = append(c.out.Steps, step), StoppedDryRun
			return c.out, nil
		case VerdictRejected:
			c.out.Steps, c.out.Stopped = append(c.out.Steps, step), StoppedRejected
			return c.out, nil
		}
		call, err := run(ctx, c.env, c.session, tool, args, c.gate.history())
		step.Result, step.HistoryID, step.DurationMS = call.Result, call.HistoryID, call.DurationMS
		if err != nil {
			step.Error = err.Error()
		}
		c.out.Steps = append(c.out.Steps, step)
		if err != nil && !isToolError(err) {
			return c.fail(err)
		}
		next := "Propose the next call, or answer the request with done."
		if ran+1 == c.maxSteps {
			next = fmt.Sprintf("The limit of %d calls for this request is reached. Reply with {\"action\":\"done\",\"answer\":…}: "+
				"answer the request from the results so far, or say what is left to do.", c.maxSteps)
		}
		c.tell(tool.Name, call.Result, err, next)
	}
	// The budget is spent: the model may only sum up what the calls found.
	// Every call succeeded, so a model that keeps proposing calls instead
	// of summing up does not fail the request: it ends at the limit with
	// the last call's result as the answer.
	c.out.Stopped = StoppedMaxSteps
	p, err := c.propose(ctx, true)
	if hasCategory(err, model.CategoryInvalidOutput) {
		fmt.Fprintf(c.env.Stderr, "lm: servers ask: the limit of %d calls is reached and the model gave no summary; the answer is the last result\n", c.maxSteps)
		last := c.out.Steps[len(c.out.Steps)-1]
		c.out.Answer = outcomeText(last.Proposal.Tool, last.Result, last.Error)
		return c.out, nil
	}
	if err != nil {
		return c.fail(err)
	}
	c.out.Answer = p.Answer
	return c.out, nil
}

// propose asks the model for its next answer: a call to a known tool with
// valid arguments, or done (only done once the steps ran out). Anything
// else is sent back with the reason, within the model's retry budget.
func (c *conversation) propose(ctx context.Context, final bool) (Proposal, error) {
	actions := []string{ActionCall, ActionDone}
	if final {
		actions = []string{ActionDone}
	}
	var p Proposal
	res, err := c.llm.Chat(ctx, model.Request{
		Messages: c.messages,
		Format:   proposalSchema(actions...),
		Accept: func(content string) (string, error) {
			var err error
			if p, err = ExtractProposal(content); err != nil {
				return "", err
			}
			if err := c.check(p, final); err != nil {
				fmt.Fprintf(c.env.Stderr, "lm: a proposal was sent back to the model: %s\n", table.Printable(err.Error()))
				return "", err
			}
			data, err := json.Marshal(p)
			return string(data), err
		},
	})
	c.out.TokensUsed += res.TokensUsed
	if err != nil {
		return Proposal{}, err
	}
	c.messages = append(c.messages, model.Message{Role: "assistant", Content: string(res.JSON)})
	return p, nil
}

// check vets a proposal before anyone sees it: the tool exists and the
// arguments are valid against its input schema.
func (c *conversation) check(p Proposal, final bool) error {
	if p.Action == ActionDone {
		return nil
	}
	if final {
		return errors.New(`no more calls may run: answer with "action": "done"`)
	}
	tool, ok := c.tools[p.Tool]
	if !ok {
		names := make([]string, 0, len(c.tools))
		for name := range c.tools {
			names = append(names, name)
		}
		sort.Strings(names)
		return fmt.Errorf("the server has no tool %q; its tools are: %s", p.Tool, strings.Join(names, ", "))
	}
	if err := Validate(tool, p.Arguments); err != nil {
		return fmt.Errorf("%v (%s)", err, op.EnvelopeOf(err).Suggestion)
	}
	return nil
}

// tell shows the model a call's result or its tool's error, followed by
// what to do next, and the person the start of it.
func (c *conversation) tell(tool string, result any, err error, next string) {
	failure := ""
	if err != nil {
		failure = err.Error()
	}
	text := outcomeText(tool, result, failure)
	showResult(c.env.Stderr, text)
	c.messages = append(c.messages, model.Message{Role: "user", Content: text + "\n" + next})
}

// replay puts an earlier request of the conversation into the messages as
// it went: the request, each proposal with what the person made of it and
// the call's outcome, and the model's answer.
func (c *conversation) replay(t AskTurn) {
	c.messages = append(c.messages, model.Message{Role: "user", Content: t.Request})
	for _, s := range t.Steps {
		proposal, _ := json.Marshal(s.Proposal)
		c.messages = append(c.messages, model.Message{Role: "assistant", Content: string(proposal)})
		switch {
		case s.Approval == VerdictRejected:
			c.messages = append(c.messages, model.Message{Role: "user", Content: "I rejected that call; it did not run."})
		case s.Approval == VerdictProposed:
			c.messages = append(c.messages, model.Message{Role: "user", Content: "That call did not run."})
		default:
			if s.Arguments != nil {
				c.messages = append(c.messages, editedMessage(s.Arguments))
			}
			c.messages = append(c.messages, model.Message{Role: "user", Content: outcomeText(s.Proposal.Tool, s.Result, s.Error)})
		}
	}
	if t.Answer != "" {
		answer, _ := json.Marshal(Proposal{Action: ActionDone, Answer: t.Answer})
		c.messages = append(c.messages, model.Message{Role: "assistant", Content: string(answer)})
	}
}

// outcomeText is a call's result or failure as the model is shown it.
func outcomeText(tool string, result any, failure string) string {
	text := ""
	if failure != "" {
		text = "The call of " + tool + " failed: " + failure
	} else {
		data, _ := json.Marshal(result)
		text = "The result of " + tool + ": " + string(data)
	}
	if len(text) > resultLimit {
		text = text[:resultLimit] + " … (cut)"
	}
	return text
}

// editedMessage tells the model the person changed a call's arguments, so
// it reads the result against what actually ran.
func editedMessage(args map[string]any) model.Message {
	data, _ := json.Marshal(args)
	return model.Message{Role: "user", Content: "I changed the arguments before running the call: " + string(data)}
}

// fail ends the request with err. Before any step it is an ordinary error;
// after, the steps that ran are printed and the exit code is err's.
func (c *conversation) fail(err error) (AskOutput, error) {
	if len(c.out.Steps) == 0 {
		return AskOutput{}, err
	}
	fmt.Fprintf(c.env.Stderr, "lm: servers ask: %v\n", err)
	c.out.Stopped, c.out.Error, c.out.exit = StoppedFailed, err.Error(), op.KindOf(err).ExitCode()
	return c.out, nil
}

func isToolError(err error) bool { return op.KindOf(err) == op.KindRemote }

// hasCategory reports whether err is an op error of the category.
func hasCategory(err error, category string) bool {
	var e *op.Error
	return errors.As(err, &e) && e.Category == category
}

// systemPrompt tells the model the server's tools and how to answer.
func systemPrompt(target Target, tools []mcp.Tool) string {
	type toolInfo struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		InputSchema any    `json:"inputSchema"`
	}
	infos := make([]toolInfo, len(tools))
	for i, t := range tools {
		schema := any(t.InputSchema)
		if len(t.RawInputSchema) > 0 {
			schema = t.RawInputSchema
		}
		infos[i] = toolInfo{Name: t.Name, Description: t.Description, InputSchema: schema}
	}
	var list bytes.Buffer
	enc := json.NewEncoder(&list)
	enc.SetEscapeHTML(false)
	enc.Encode(infos)
	return fmt.Sprintf(`You carry out a person's request with the tools of the MCP server %s. Its tools, as JSON (name, description, inputSchema):
%s
Reply with one JSON object and nothing else:
- to run a tool: {"action":"call","tool":"NAME","arguments":{…},"reason":"why, in one sentence"}, the arguments valid against the tool's inputSchema;
- when the request is answered, or the tools cannot do it: {"action":"done","answer":"the answer, from the results"}.
A person approves each call before it runs; its result comes back to you.`, target, list.String())
}
