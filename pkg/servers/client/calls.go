package client

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/op"
)

// Tools lists the server's tools, every page.
func (s *Session) Tools(ctx context.Context) ([]mcp.Tool, error) {
	var tools []mcp.Tool
	err := s.call(ctx, func(ctx context.Context, c *client.Client) error {
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err == nil {
			tools = res.Tools
		}
		return err
	}, always)
	return tools, err
}

// Tool finds one tool by name.
func (s *Session) Tool(ctx context.Context, name string) (mcp.Tool, error) {
	tools, err := s.Tools(ctx)
	if err != nil {
		return mcp.Tool{}, err
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		if t.Name == name {
			return t, nil
		}
		names[i] = t.Name
	}
	sort.Strings(names)
	return mcp.Tool{}, op.Errorf(op.KindNotFound, "server %s has no tool %q", s.target, name).
		WithHint("its tools: %s", strings.Join(names, ", "))
}

// Progress is one notifications/progress of a call: total is 0 when the
// server does not know it.
type Progress struct {
	Progress, Total float64
	Message         string
}

// CallTool calls a tool with arguments already validated; with onProgress
// the call carries a progress token and the server's progress
// notifications go to it. After a dropped connection the call is sent again
// only when it cannot run twice: it never reached the server, or the tool
// says it is read-only or idempotent.
func (s *Session) CallTool(ctx context.Context, tool mcp.Tool, args map[string]any, onProgress func(Progress)) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool.Name, args
	if onProgress != nil {
		token := fmt.Sprintf("lm-%d", progressTokens.Add(1))
		req.Params.Meta = &mcp.Meta{ProgressToken: token}
		s.progress.Store(token, onProgress)
		defer s.progress.Delete(token)
	}
	repeatable := isTrue(tool.Annotations.ReadOnlyHint) || isTrue(tool.Annotations.IdempotentHint)
	err := s.call(ctx, func(ctx context.Context, c *client.Client) error {
		var err error
		res, err = c.CallTool(ctx, req)
		return err
	}, func(err error) bool { return repeatable || undelivered(err) })
	return res, err
}

// progressTokens numbers the progress tokens of this process's calls.
var progressTokens atomic.Int64

// notified passes a progress notification to the call it belongs to.
func (s *Session) notified(n mcp.JSONRPCNotification) {
	if n.Method != string(mcp.MethodNotificationProgress) {
		return
	}
	fields := n.Params.AdditionalFields
	report, ok := s.progress.Load(fmt.Sprint(fields["progressToken"]))
	if !ok {
		return
	}
	p := Progress{}
	p.Progress, _ = fields["progress"].(float64)
	p.Total, _ = fields["total"].(float64)
	p.Message, _ = fields["message"].(string)
	report.(func(Progress))(p)
}

func isTrue(b *bool) bool { return b != nil && *b }

// Resources lists the server's resources and resource templates; a server
// without the resources capability has none.
func (s *Session) Resources(ctx context.Context) (resources, templates []any, err error) {
	if s.Initialized().Capabilities.Resources == nil {
		return []any{}, []any{}, nil
	}
	err = s.call(ctx, func(ctx context.Context, c *client.Client) error {
		res, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
		if err != nil {
			return err
		}
		tpl, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
		if err != nil {
			return err
		}
		resources, templates = plain(res.Resources), plain(tpl.ResourceTemplates)
		return nil
	}, always)
	return resources, templates, err
}

// Prompts lists the server's prompts; a server without the prompts
// capability has none.
func (s *Session) Prompts(ctx context.Context) ([]any, error) {
	if s.Initialized().Capabilities.Prompts == nil {
		return []any{}, nil
	}
	var prompts []any
	err := s.call(ctx, func(ctx context.Context, c *client.Client) error {
		res, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
		if err == nil {
			prompts = plain(res.Prompts)
		}
		return err
	}, always)
	return prompts, err
}

// plain turns protocol values into plain JSON values, exactly as the server
// sent them on the wire.
func plain[T any](items []T) []any {
	out := make([]any, 0, len(items))
	for _, it := range items {
		out = append(out, jsonValue(it))
	}
	return out
}

func jsonValue(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	json.Unmarshal(data, &out)
	return out
}

// resultValue is what a call prints: the structured content when the tool
// gives one, else its content blocks.
func resultValue(res *mcp.CallToolResult) any {
	if res.StructuredContent != nil {
		return jsonValue(res.StructuredContent)
	}
	return jsonValue(res.Content)
}

// resultText joins a result's text blocks: the message of a tool error,
// and the summary kept in history.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 {
		data, _ := json.Marshal(resultValue(res))
		return string(data)
	}
	return strings.Join(parts, "\n")
}
