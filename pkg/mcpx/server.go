// Package mcpx serves lm's operations as MCP tools with mcp-go. Every tool is
// generated from an [op.Operation]: its description, input and output
// schemas, annotations and handler, so MCP and the CLI cannot drift apart.
package mcpx

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"lmtool.dev/lm/pkg/jsonio"
	"lmtool.dev/lm/pkg/op"
)

// Instructions tell connecting agents how to use lm's tools.
const Instructions = "lm exposes a human→agent instruction queue and developer helpers. " +
	"Call get_user_request to receive the user's next instruction; after finishing it (or when the answer is empty), " +
	"call get_user_request again instead of ending your session."

// NewServer builds an MCP server exposing ops and resources. base is copied for every
// call, with the client's name and progress reporting filled in, and, for a
// caller other than the person, the roots its client declares (base.Roots
// when it declares none). Only, when
// not empty, limits the tools to those groups. Options are applied after
// the defaults (the gateway's hub advertises listChanged, for one).
//
// tools/list shows a caller only the operations it may call — base's
// caller, or the one a face recorded on the request's context — given
// base's grant; a tool called anyway is refused by [op.Operation.Call].
// Tools that are not lm's operations (a hub's) are listed as they are.
func NewServer(ops []op.Operation, resources []op.Resource, base op.Env, version string, only []string, options ...server.ServerOption) (*server.MCPServer, error) {
	for _, g := range only {
		if !slices.ContainsFunc(ops, func(o op.Operation) bool { return o.Info().Group() == g }) {
			return nil, op.Errorf(op.KindInvalid, "unknown group %q", g).WithHint("groups: %s", strings.Join(Groups(ops), ", "))
		}
	}
	s := server.NewMCPServer("lm", version, append([]server.ServerOption{
		server.WithToolCapabilities(false),
		// lm sends notifications/message (run_task's streamed output), so it
		// declares logging and answers logging/setLevel.
		server.WithLogging(),
		server.WithRecovery(),
		server.WithResourceRecovery(),
		server.WithInstructions(Instructions),
	}, options...)...)
	roots := followRoots(s)
	hooks := s.GetHooks()
	if hooks == nil {
		hooks = &server.Hooks{}
		server.WithHooks(hooks)(s)
	}
	hooks.AddAfterListTools(callersTools(ops, base))
	for _, o := range ops {
		m := o.Info()
		if m.CLIOnly || m.Stream || (len(only) > 0 && !slices.Contains(only, m.Group())) {
			continue
		}
		tool, err := Tool(o)
		if err != nil {
			return nil, err
		}
		s.AddTool(tool, handler(s, o, base, roots))
	}
	for _, r := range resources {
		if len(only) > 0 && !slices.Contains(only, r.Group) {
			continue
		}
		addResource(s, r, base, roots)
	}
	return s, nil
}

// callersTools drops from a tools/list the operations the request's caller
// may not call. It is a hook on the list, not a tool filter: mcp-go applies
// filters to tools/call as well and answers "tool not found", where a
// caller calling a tool anyway must get the denied result that says why.
func callersTools(ops []op.Operation, base op.Env) server.OnAfterListToolsFunc {
	metas := map[string]op.Meta{}
	for _, o := range ops {
		metas[o.Info().Name] = o.Info()
	}
	return func(ctx context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		caller := base.Caller
		if c, ok := op.CallerFrom(ctx); ok {
			caller = c
		}
		res.Tools = slices.DeleteFunc(res.Tools, func(t mcp.Tool) bool {
			m, own := metas[t.Name]
			return own && !op.Permitted(m, caller, base.Grant)
		})
	}
}

// addResource serves an [op.Resource]: a fixed URI as a resource, a URI
// template as a resource template. The value Read returns is sent as JSON.
func addResource(s *server.MCPServer, r op.Resource, base op.Env, roots *clientRoots) {
	read := func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		u, err := url.Parse(req.Params.URI)
		if err != nil {
			return nil, fmt.Errorf("resource URI %q: %w", req.Params.URI, err)
		}
		env := base
		if c, ok := op.CallerFrom(ctx); ok {
			env.Caller = c
		}
		if !env.Caller.IsPerson() {
			env.Roots = roots.of(ctx, base.Roots)
		}
		out, err := r.Read(ctx, &env, u)
		if op.KindOf(err) == op.KindNotFound {
			return nil, resourceNotFound{uri: req.Params.URI, err: err}
		}
		if err != nil {
			return nil, err
		}
		text, err := jsonio.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", req.Params.URI, err)
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: r.MIMEType, Text: string(text)}}, nil
	}
	if !strings.Contains(r.URITemplate, "{") {
		s.AddResource(mcp.NewResource(r.URITemplate, r.Name, mcp.WithResourceDescription(r.Description), mcp.WithMIMEType(r.MIMEType)), read)
		return
	}
	s.AddResourceTemplate(mcp.NewResourceTemplate(r.URITemplate, r.Name,
		mcp.WithTemplateDescription(r.Description), mcp.WithTemplateMIMEType(r.MIMEType)), read)
}

// Groups lists the groups that have MCP tools.
func Groups(ops []op.Operation) []string {
	var groups []string
	for _, o := range ops {
		m := o.Info()
		if !m.CLIOnly && !m.Stream && !slices.Contains(groups, m.Group()) {
			groups = append(groups, m.Group())
		}
	}
	return groups
}

// Tool describes an operation as an MCP tool.
func Tool(o op.Operation) (mcp.Tool, error) {
	m := o.Info()
	in, err := json.Marshal(op.WithoutFields(o.InputSchema(), m.CLIFields))
	if err != nil {
		return mcp.Tool{}, fmt.Errorf("tool %s: input schema: %w", m.Name, err)
	}
	out, err := json.Marshal(o.OutputSchema())
	if err != nil {
		return mcp.Tool{}, fmt.Errorf("tool %s: output schema: %w", m.Name, err)
	}
	desc := m.Summary
	if m.Description != "" {
		desc += ".\n\n" + m.Description
	}
	t := mcp.NewTool(m.Name,
		mcp.WithDescription(desc),
		mcp.WithReadOnlyHintAnnotation(m.Effect == op.ReadOnly),
		mcp.WithDestructiveHintAnnotation(m.Effect == op.Destructive),
		mcp.WithIdempotentHintAnnotation(m.Idempotent),
		mcp.WithOpenWorldHintAnnotation(false),
		mcp.WithRawOutputSchema(out),
	)
	// NewTool pre-fills an input schema; a tool with both that and a raw
	// schema fails to marshal in tools/list.
	t.InputSchema = mcp.ToolInputSchema{}
	t.RawInputSchema = in
	return t, nil
}

func handler(s *server.MCPServer, o op.Operation, base op.Env, roots *clientRoots) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		env := base
		env.Client = clientName(ctx, req)
		caller := base.Caller
		if c, ok := op.CallerFrom(ctx); ok {
			caller = c
			// A caller recorded on the request means a face with many
			// clients at once (the gateway); there an agent that gave no
			// name is known by its MCP session, so two of them never share
			// a wait or a row in the queue's status.
			if session := server.ClientSessionFromContext(ctx); c.Name == "" && session != nil && session.SessionID() != "" {
				env.Client = SessionAgent(session.SessionID())
			}
		}
		if !caller.IsPerson() {
			env.Roots = roots.of(ctx, base.Roots)
		}
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			token := req.Params.Meta.ProgressToken
			env.Progress = func(progress, total float64, message string) {
				s.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
					"progressToken": token, "progress": progress, "total": total, "message": message,
				})
			}
		}
		env.Log = func(level string, data any) {
			s.SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": level, "logger": "lm", "data": data})
		}
		out, err := o.Call(ctx, &env, arguments(req))
		if err != nil {
			return ErrorResult(err), nil
		}
		return Result(out)
	}
}

// Result is a successful call: structuredContent plus the same JSON as text
// for clients that only read content.
func Result(out any) (*mcp.CallToolResult, error) {
	text, err := jsonio.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(string(text))},
		StructuredContent: json.RawMessage(text),
	}, nil
}

// ErrorResult is a failed call as the model should see it: an isError
// result whose text is the JSON error envelope (what went wrong, its
// category, whether a retry can help, and what to do instead).
func ErrorResult(err error) *mcp.CallToolResult {
	env := op.EnvelopeOf(err)
	text, _ := jsonio.Marshal(env)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.NewTextContent(string(text))}}
}

func arguments(req mcp.CallToolRequest) json.RawMessage {
	switch a := req.Params.Arguments.(type) {
	case nil:
		return nil
	case json.RawMessage:
		return a
	default:
		raw, _ := json.Marshal(a)
		return raw
	}
}

// SessionAgent is the agent id of a client known only by its session on a
// face that serves many clients: "agent-" and the session id's first eight
// letters or digits, which are random.
func SessionAgent(session string) string {
	session = strings.TrimPrefix(session, "mcp-session-")
	key := make([]rune, 0, 8)
	for _, r := range session {
		if len(key) == cap(key) {
			break
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			key = append(key, r)
		}
	}
	return "agent-" + string(key)
}

func clientName(ctx context.Context, req mcp.CallToolRequest) string {
	if req.Params.Meta != nil {
		if info := req.Params.Meta.ClientInfo(); info != nil && info.Name != "" {
			return info.Name
		}
	}
	if s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		return s.GetClientInfo().Name
	}
	return ""
}
