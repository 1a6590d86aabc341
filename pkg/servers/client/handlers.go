package client

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/jsonio"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/table"
)

// open resolves the input's target and connects to it.
func open(ctx context.Context, env *op.Env, in TargetInput) (*Session, error) {
	t, err := in.resolve(ctx, env)
	if err != nil {
		return nil, err
	}
	return openTarget(ctx, env, t)
}

// openTarget connects to a stored or resolved target. A stored stdio
// command runs only for a person at the command line, like a typed one; a
// stored URL gets the bearer token from the environment again.
func openTarget(ctx context.Context, env *op.Env, t Target) (*Session, error) {
	if t.Name != "" && t.URL == "" && len(t.Command) == 0 {
		// A saved call names a configured server: resolve it afresh.
		resolved, err := lookup(ctx, env, t.Name)
		if err != nil {
			return nil, err
		}
		if t.Timeout > 0 {
			resolved.Timeout = t.Timeout
		}
		t = resolved
	}
	// A configured server was set up by a person; only ad-hoc commands are
	// reserved to the command line.
	if len(t.Command) > 0 && t.Name == "" && !mayStartCommand(env) {
		return nil, op.Errorf(op.KindDenied, "%s is a stdio command, which only lm's command line may start", t).
			WithHint("over MCP or HTTP, use a configured server's name or a URL")
	}
	if t.URL != "" {
		if token := env.Getenv(TokenEnv); token != "" && t.Headers["Authorization"] == "" {
			t.Headers = mapWith(t.Headers, "Authorization", "Bearer "+token)
		}
	}
	opts := OptionsFromEnv(env)
	opts.CallTimeout = t.Timeout
	return Connect(ctx, t, opts)
}

// progressReporter shows a call's progress notifications: passed on to
// whoever called lm when they listen for progress (an MCP client), and on
// lm's command line written to stderr, as one line that updates on a
// terminal and as plain lines otherwise.
func progressReporter(env *op.Env, tool string) func(Progress) {
	tty := env.Caller.Terminal && jsonio.IsTerminal(env.Stderr)
	return func(p Progress) {
		env.ReportProgress(p.Progress, p.Total, p.Message)
		if !env.Caller.Terminal {
			return
		}
		line := fmt.Sprintf("lm: %s: %g", tool, p.Progress)
		if p.Total > 0 {
			line += fmt.Sprintf("/%g", p.Total)
		}
		if p.Message != "" {
			line += " " + table.Printable(p.Message) // the server's words
		}
		if tty {
			// Rewrite the line in place; the next output starts on a new one.
			fmt.Fprintf(env.Stderr, "\r\033[K%s", line)
			if p.Total > 0 && p.Progress >= p.Total {
				fmt.Fprintln(env.Stderr)
			}
			return
		}
		fmt.Fprintln(env.Stderr, line)
	}
}

// mayStartCommand reports whether the caller may start a stdio command:
// lm's command line may; an agent may only where the person allowed it at
// launch, which the callers' policy has checked before the handler runs (a
// command in the input needs --allow TOOL.command, a saved favourite or
// history entry — the person's own choice — needs --allow of the operation
// that runs it). A request over HTTP never may, not even the page's: a
// browser must not be a way to run programs.
func mayStartCommand(env *op.Env) bool {
	return env.Caller.Terminal || env.Caller.Role == op.RoleAgent
}

func mapWith(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for key, val := range m {
		out[key] = val
	}
	return out
}

// TargetOnlyInput is the input of commands that only need a server.
type TargetOnlyInput struct {
	TargetInput
}

// InfoOutput describes a server.
type InfoOutput struct {
	Target          string `json:"target"`
	Transport       string `json:"transport" jsonschema:"stdio, streamable-http or sse"`
	ServerInfo      any    `json:"server_info" jsonschema:"the server's name, version and title"`
	ProtocolVersion string `json:"protocol_version"`
	Capabilities    any    `json:"capabilities" jsonschema:"what the server declared it supports (tools, resources, prompts, logging, …)"`
	Instructions    string `json:"instructions,omitempty"`
}

// Info connects and reports the server's handshake.
func Info(ctx context.Context, env *op.Env, in TargetOnlyInput) (InfoOutput, error) {
	s, err := open(ctx, env, in.TargetInput)
	if err != nil {
		return InfoOutput{}, err
	}
	defer s.Close()
	init := s.Initialized()
	return InfoOutput{
		Target: s.target.String(), Transport: s.Transport(), ServerInfo: jsonValue(init.ServerInfo),
		ProtocolVersion: init.ProtocolVersion, Capabilities: jsonValue(init.Capabilities), Instructions: init.Instructions,
	}, nil
}

// ToolsOutput lists a server's tools as it sent them.
type ToolsOutput struct {
	Tools []any `json:"tools" jsonschema:"name, description, inputSchema, outputSchema and annotations of each tool"`
}

// Tools lists a server's tools with their schemas and annotations.
func Tools(ctx context.Context, env *op.Env, in TargetOnlyInput) (ToolsOutput, error) {
	s, err := open(ctx, env, in.TargetInput)
	if err != nil {
		return ToolsOutput{}, err
	}
	defer s.Close()
	tools, err := s.Tools(ctx)
	return ToolsOutput{Tools: plain(tools)}, err
}

// ResourcesOutput lists a server's resources.
type ResourcesOutput struct {
	Resources []any `json:"resources"`
	Templates []any `json:"templates"`
}

// Resources lists a server's resources and resource templates.
func Resources(ctx context.Context, env *op.Env, in TargetOnlyInput) (ResourcesOutput, error) {
	s, err := open(ctx, env, in.TargetInput)
	if err != nil {
		return ResourcesOutput{}, err
	}
	defer s.Close()
	res, tpl, err := s.Resources(ctx)
	return ResourcesOutput{Resources: res, Templates: tpl}, err
}

// PromptsOutput lists a server's prompts.
type PromptsOutput struct {
	Prompts []any `json:"prompts"`
}

// Prompts lists a server's prompts.
func Prompts(ctx context.Context, env *op.Env, in TargetOnlyInput) (PromptsOutput, error) {
	s, err := open(ctx, env, in.TargetInput)
	if err != nil {
		return PromptsOutput{}, err
	}
	defer s.Close()
	prompts, err := s.Prompts(ctx)
	return PromptsOutput{Prompts: prompts}, err
}

// PingOutput is a ping's round trip.
type PingOutput struct {
	OK bool    `json:"ok"`
	MS float64 `json:"ms" jsonschema:"the ping's round trip in milliseconds (the connection is not counted)"`
}

// Ping connects and pings the server.
func Ping(ctx context.Context, env *op.Env, in TargetOnlyInput) (PingOutput, error) {
	s, err := open(ctx, env, in.TargetInput)
	if err != nil {
		return PingOutput{}, err
	}
	defer s.Close()
	start := time.Now()
	if err := s.Ping(ctx); err != nil {
		return PingOutput{}, err
	}
	return PingOutput{OK: true, MS: float64(time.Since(start).Microseconds()) / 1000}, nil
}

// CallInput is a tool call.
type CallInput struct {
	TargetInput
	Tool      string         `json:"tool,omitempty" jsonschema:"the tool to call"`
	JSON      string         `json:"json,omitempty" jsonschema:"the arguments as a JSON object (text)"`
	Arguments map[string]any `json:"arguments,omitempty" jsonschema:"the arguments as an object"`
	Arg       []string       `json:"arg,omitempty" jsonschema:"one argument NAME=VALUE, converted to the type the tool's schema gives it (repeatable)"`
}

// shift reads the command line's positional words when the target came
// from --url or -- CMD: then the first word is the tool, not a server
// name (`lm servers call TOOL [JSON] --url URL`).
func shift(env *op.Env, t *TargetInput, words ...*string) error {
	if !env.Caller.Terminal || t.Server == "" || (t.URL == "" && len(t.Command) == 0) {
		return nil
	}
	if last := words[len(words)-1]; *last != "" {
		return op.Errorf(op.KindInvalid, "too many arguments: %q", *last).
			WithHint("with --url or -- CMD, the server is not named: give the tool and its JSON arguments only")
	}
	for i := len(words) - 1; i > 0; i-- {
		*words[i] = *words[i-1]
	}
	*words[0], t.Server = t.Server, ""
	return nil
}

// arguments merges the JSON text, the object and the --arg pairs.
func (in CallInput) arguments(tool mcp.Tool) (map[string]any, error) {
	args := map[string]any{}
	if in.JSON != "" {
		dec := json.NewDecoder(strings.NewReader(in.JSON))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil {
			return nil, op.Errorf(op.KindInvalid, "the arguments %q are not a JSON object: %v", in.JSON, err).
				WithHint(`for example '{"message":"hi"}', or --arg message=hi`)
		}
	}
	for k, v := range in.Arguments {
		args[k] = v
	}
	if len(in.Arg) > 0 {
		s, err := schemaOf(tool)
		if err != nil {
			return nil, op.Errorf(op.KindInvalid, "%w", err)
		}
		for _, kv := range in.Arg {
			k, v, err := ParseArg(s, kv)
			if err != nil {
				return nil, err
			}
			args[k] = v
		}
	}
	return args, nil
}

// CallOutput is a tool's result.
type CallOutput struct {
	Result     any    `json:"result" jsonschema:"the tool's structuredContent, else its content blocks"`
	HistoryID  string `json:"history_id" jsonschema:"the call's id in lm servers history"`
	DurationMS int64  `json:"duration_ms"`
}

// Call calls a tool: the arguments are checked against its input schema
// first and, on a terminal, missing required ones are asked for.
func Call(ctx context.Context, env *op.Env, in CallInput) (CallOutput, error) {
	if err := shift(env, &in.TargetInput, &in.Tool, &in.JSON); err != nil {
		return CallOutput{}, err
	}
	if in.Tool == "" {
		return CallOutput{}, op.Errorf(op.KindInvalid, "no tool given").WithHint("lm servers tools TARGET lists them")
	}
	s, err := open(ctx, env, in.TargetInput)
	if err != nil {
		return CallOutput{}, err
	}
	defer s.Close()
	tool, err := s.Tool(ctx, in.Tool)
	if err != nil {
		return CallOutput{}, err
	}
	args, err := in.arguments(tool)
	if err != nil {
		return CallOutput{}, err
	}
	if env.CanAsk() {
		if err := askMissing(tool, args, env.Stdin, env.Stderr); err != nil {
			return CallOutput{}, err
		}
	}
	return run(ctx, env, s, tool, args, approvalOf(env))
}

// approvalOf is who lets a call run that nobody was asked about: the person
// (at the command line, or at the page, whose Approve sent the call), or
// else an agent or a program.
func approvalOf(env *op.Env) string {
	if env.Caller.IsPerson() {
		return Approved
	}
	return Auto
}

// run validates and executes one call and records it in the history with
// its approval. A tool that reports an error (isError) fails with its
// message; the output still names the history entry of a call that ran.
func run(ctx context.Context, env *op.Env, s *Session, tool mcp.Tool, args map[string]any, approval string) (CallOutput, error) {
	if err := Validate(tool, args); err != nil {
		return CallOutput{}, err
	}
	start := time.Now()
	res, err := s.CallTool(ctx, tool, args, progressReporter(env, tool.Name))
	r := Record{Time: now(env), Target: s.target, Tool: tool.Name, Arguments: args, Approval: approval,
		DurationMS: time.Since(start).Milliseconds()}
	switch {
	case err != nil && ctx.Err() != nil:
		r.Outcome, r.Summary = OutcomeCancelled, "stopped before the server answered: "+err.Error()
	case err != nil:
		r.Outcome, r.Summary = OutcomeFailed, err.Error()
	case res.IsError:
		r.Outcome, r.Summary = OutcomeToolError, resultText(res)
	default:
		r.Outcome, r.Summary = OutcomeOK, resultText(res)
	}
	// A call the caller stopped waiting for is recorded all the same: it
	// may have run.
	r, recErr := record(context.WithoutCancel(ctx), env, r)
	if recErr != nil {
		fmt.Fprintf(env.Stderr, "lm: warning: the call ran but was not recorded in the history: %v\n", recErr)
	}
	out := CallOutput{HistoryID: r.ID, DurationMS: r.DurationMS}
	if err != nil {
		return out, err
	}
	if res.IsError {
		return out, toolError(tool.Name, resultText(res))
	}
	out.Result = resultValue(res)
	return out, nil
}

// toolError is a tool's isError result as an error. One that carries lm's
// error envelope (lm's own tools, and the hub's answer when a server timed
// out) keeps its kind, so a timeout exits 7 through a gateway too.
func toolError(tool, text string) error {
	var e op.Envelope
	if json.Unmarshal([]byte(text), &e) == nil && e.Error != "" && e.ErrorCategory != "" &&
		e.ExitCode > int(op.KindOK) && e.ExitCode <= int(op.KindChecksFailed) {
		return &op.Error{Kind: e.Kind(), Category: e.ErrorCategory, Hint: e.Suggestion,
			Err: fmt.Errorf("tool %s failed: %s", tool, e.Error)}
	}
	return &op.Error{Kind: op.KindRemote, Category: OutcomeToolError, Err: fmt.Errorf("tool %s failed: %s", tool, text)}
}

func now(env *op.Env) time.Time {
	if env.Now != nil {
		return env.Now().UTC()
	}
	return time.Now().UTC()
}
