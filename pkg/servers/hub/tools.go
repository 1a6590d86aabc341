package hub

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/op"
)

// Tools are the servers' tools as /mcp lists them (namespaced), in name
// order, for clients that do not speak MCP (spec 002's GET /tools).
func (h *Hub) Tools() []mcp.Tool {
	if h.aggregate == nil {
		return nil
	}
	var tools []mcp.Tool
	for _, name := range h.toolNames() {
		if st := h.aggregate.GetTool(name); st != nil {
			tools = append(tools, st.Tool)
		}
	}
	slices.SortFunc(tools, func(a, b mcp.Tool) int { return cmp.Compare(a.Name, b.Name) })
	return tools
}

// HasTool reports whether a running server serves name on /mcp.
func (h *Hub) HasTool(name string) bool {
	return h.aggregate != nil && slices.Contains(h.toolNames(), name)
}

// Call calls one of Tools by its namespaced name, as /mcp would: through
// the cache, the breaker and the server's session. The value is the
// result's structuredContent, or its content; a tool that reports an error
// is an error.
func (h *Hub) Call(ctx context.Context, name string, arguments json.RawMessage) (any, error) {
	st := h.aggregate.GetTool(name)
	if !h.HasTool(name) || st == nil {
		return nil, op.Errorf(op.KindNotFound, "no tool %q", name)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	if len(arguments) > 0 && string(arguments) != "null" {
		if err := json.Unmarshal(arguments, &req.Params.Arguments); err != nil {
			return nil, op.Errorf(op.KindInvalid, "the parameters of %s must be a JSON object: %v", name, err)
		}
	}
	res, err := st.Handler(ctx, req)
	switch {
	case err != nil:
		return nil, op.Errorf(op.KindUnavailable, "%w", err)
	case res.IsError:
		return nil, op.Errorf(op.KindRemote, "tool %s failed: %s", name, toolErrorText(res))
	case res.StructuredContent != nil:
		return res.StructuredContent, nil
	}
	return res.Content, nil
}

// toolNames are the names the servers' tools have on /mcp.
func (h *Hub) toolNames() []string {
	h.mu.Lock()
	children := make([]*child, 0, len(h.children))
	for _, c := range h.children {
		children = append(children, c)
	}
	h.mu.Unlock()
	var names []string
	for _, c := range children {
		c.mu.Lock()
		names = append(names, c.mirrored.aggTools...)
		c.mu.Unlock()
	}
	return names
}
