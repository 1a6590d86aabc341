package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"lmtool.dev/lm/pkg/servers/cache"
)

// mirrored records what a child's lists put on the endpoints, so the next
// refresh can take it off again.
type mirrored struct {
	tools, prompts, resources          []string // upstream names and URIs
	aggTools, aggPrompts, aggResources []string // as registered on /mcp
	collisions                         []string
}

// Separator joins a server's name and its tool's or prompt's name on /mcp.
const Separator = "__"

// maxNameLen is the longest tool name clients accept.
const maxNameLen = 64

var nameUnsafe = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// Namespaced is a tool's or prompt's name on /mcp: SERVER__NAME, only
// [A-Za-z0-9_-], at most 64 characters (a long name keeps its start and
// gains a short hash of the whole, so it stays unique).
func Namespaced(server, name string) string {
	n := server + Separator + nameUnsafe.ReplaceAllString(name, "_")
	if len(n) <= maxNameLen {
		return n
	}
	sum := sha256.Sum256([]byte(server + Separator + name))
	return n[:maxNameLen-9] + "_" + hex.EncodeToString(sum[:4])
}

// mirror lists a child's tools, prompts and resources and registers them
// on its own endpoint and, namespaced, on /mcp. The registrations send
// list_changed to the endpoints' clients.
func (h *Hub) mirror(ctx context.Context, c *child, cl *client.Client) error {
	caps := cl.GetServerCapabilities()
	cfg := c.config()
	lctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout())
	defer cancel()
	var tools []mcp.Tool
	var prompts []mcp.Prompt
	var resources []mcp.Resource
	if caps.Tools != nil {
		res, err := cl.ListTools(lctx, mcp.ListToolsRequest{})
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		for _, t := range res.Tools {
			if cfg.Exposes(t.Name) {
				tools = append(tools, t)
			}
		}
	}
	if caps.Prompts != nil {
		res, err := cl.ListPrompts(lctx, mcp.ListPromptsRequest{})
		if err != nil {
			return fmt.Errorf("prompts/list: %w", err)
		}
		prompts = res.Prompts
	}
	if caps.Resources != nil {
		res, err := cl.ListResources(lctx, mcp.ListResourcesRequest{})
		if err != nil {
			return fmt.Errorf("resources/list: %w", err)
		}
		resources = res.Resources
	}

	// A session that ended while its lists were being read must not put
	// its tools back.
	h.mirrorMu.Lock()
	defer h.mirrorMu.Unlock()
	c.mu.Lock()
	live := c.live == cl
	c.mu.Unlock()
	if !live {
		return nil
	}
	var m mirrored
	var ownTools []server.ServerTool
	for _, t := range tools {
		ownTools = append(ownTools, server.ServerTool{Tool: t, Handler: h.toolHandler(c, c.own, t.Name)})
		m.tools = append(m.tools, t.Name)
	}
	var ownPrompts []server.ServerPrompt
	for _, p := range prompts {
		ownPrompts = append(ownPrompts, server.ServerPrompt{Prompt: p, Handler: h.promptHandler(c, p.Name)})
		m.prompts = append(m.prompts, p.Name)
	}
	var ownResources []server.ServerResource
	for _, r := range resources {
		ownResources = append(ownResources, server.ServerResource{Resource: r, Handler: h.resourceHandler(c)})
		m.resources = append(m.resources, r.URI)
	}
	c.own.SetTools(ownTools...)
	c.own.SetPrompts(ownPrompts...)
	c.own.SetResources(ownResources...)

	if h.aggregate != nil {
		h.takeOff(c)
		// Two of the server's own names may sanitise to the same one, so
		// names taken in this batch count as well as those on /mcp.
		taken := map[string]map[string]bool{"tool": {}, "prompt": {}, "resource": {}}
		var aggTools []server.ServerTool
		for i, t := range tools {
			name := Namespaced(c.name, t.Name)
			if taken["tool"][name] || h.aggregate.GetTool(name) != nil {
				m.collisions = append(m.collisions, fmt.Sprintf("tool %s (as %s)", t.Name, name))
				continue
			}
			taken["tool"][name] = true
			t.Name = name
			upstream := tools[i].Name
			aggTools = append(aggTools, server.ServerTool{Tool: t, Handler: h.toolHandler(c, h.aggregate, upstream)})
			m.aggTools = append(m.aggTools, name)
		}
		existingPrompts := h.aggregate.ListPrompts()
		var aggPrompts []server.ServerPrompt
		for _, p := range prompts {
			name := Namespaced(c.name, p.Name)
			if taken["prompt"][name] || existingPrompts[name] != nil {
				m.collisions = append(m.collisions, fmt.Sprintf("prompt %s (as %s)", p.Name, name))
				continue
			}
			taken["prompt"][name] = true
			upstream := p.Name
			p.Name = name
			aggPrompts = append(aggPrompts, server.ServerPrompt{Prompt: p, Handler: h.promptHandler(c, upstream)})
			m.aggPrompts = append(m.aggPrompts, name)
		}
		existingResources := h.aggregate.ListResources()
		var aggResources []server.ServerResource
		for _, r := range resources {
			if taken["resource"][r.URI] || existingResources[r.URI] != nil {
				m.collisions = append(m.collisions, "resource "+r.URI)
				continue
			}
			taken["resource"][r.URI] = true
			r.Name = Namespaced(c.name, r.Name)
			aggResources = append(aggResources, server.ServerResource{Resource: r, Handler: h.resourceHandler(c)})
			m.aggResources = append(m.aggResources, r.URI)
		}
		if len(aggTools) > 0 {
			h.aggregate.AddTools(aggTools...)
		}
		if len(aggPrompts) > 0 {
			h.aggregate.AddPrompts(aggPrompts...)
		}
		if len(aggResources) > 0 {
			h.aggregate.AddResources(aggResources...)
		}
		for _, col := range m.collisions {
			h.log.Warn("name collision on /mcp: not exposed there", "server", c.name, "what", col)
		}
	}
	c.mu.Lock()
	c.mirrored = m
	c.mu.Unlock()
	h.notifyChange()
	return nil
}

// takeOff removes a child's registrations from /mcp (under mirrorMu).
func (h *Hub) takeOff(c *child) {
	c.mu.Lock()
	m := c.mirrored
	c.mu.Unlock()
	if len(m.aggTools) > 0 {
		h.aggregate.DeleteTools(m.aggTools...)
	}
	if len(m.aggPrompts) > 0 {
		h.aggregate.DeletePrompts(m.aggPrompts...)
	}
	if len(m.aggResources) > 0 {
		h.aggregate.DeleteResources(m.aggResources...)
	}
}

// unmirror takes a server whose session ended (stopped, crashed, removed)
// off every endpoint: a client never sees tools it cannot call, and the
// deletions send list_changed to the endpoints' clients.
func (h *Hub) unmirror(c *child) {
	h.mirrorMu.Lock()
	defer h.mirrorMu.Unlock()
	if h.aggregate != nil {
		h.takeOff(c)
	}
	c.own.SetTools()
	c.own.SetPrompts()
	c.own.SetResources()
	c.mu.Lock()
	c.live, c.mirrored = nil, mirrored{}
	c.mu.Unlock()
	h.notifyChange()
}

// toolHandler forwards a tools/call to the child under its upstream name.
// A progress token is swapped for one unique to the hub, so progress from
// the child reaches the one downstream request that asked for it.
func (h *Hub) toolHandler(c *child, endpoint *server.MCPServer, upstream string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		params := req.Params
		params.Name = upstream
		if params.Meta != nil && params.Meta.ProgressToken != nil {
			original := params.Meta.ProgressToken
			token := fmt.Sprintf("lm-%d", h.tokenSeq.Add(1))
			meta := *params.Meta
			meta.ProgressToken = token
			params.Meta = &meta
			h.progress.Store(token, func(p map[string]any) {
				out := maps.Clone(p)
				out["progressToken"] = original
				endpoint.SendNotificationToClient(ctx, "notifications/progress", out)
			})
			defer h.progress.Delete(token)
		}
		var key *cache.Key
		if fields, ok := c.config().CacheTools[upstream]; ok {
			if k, err := cache.KeyOf(c.name, "tools/call", upstream, chosen(req.GetArguments(), fields)); err == nil {
				key = &k
			}
		}
		v, err := h.forward(ctx, c, "tools/call", upstream, key, func(ctx context.Context, cl *client.Client) (any, error) {
			return cl.CallTool(ctx, mcp.CallToolRequest{Params: params})
		})
		if err != nil {
			return nil, err
		}
		return v.(*mcp.CallToolResult), nil
	}
}

// chosen is the arguments a cached tool is keyed on: the named ones, or
// all of them when none are named.
func chosen(args map[string]any, fields []string) map[string]any {
	if len(fields) == 0 {
		return args
	}
	out := map[string]any{}
	for _, f := range fields {
		if v, ok := args[f]; ok {
			out[f] = v
		}
	}
	return out
}

func (h *Hub) promptHandler(c *child, upstream string) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		req.Params.Name = upstream
		v, err := h.forward(ctx, c, "prompts/get", upstream, nil, func(ctx context.Context, cl *client.Client) (any, error) {
			return cl.GetPrompt(ctx, req)
		})
		if err != nil {
			return nil, err
		}
		return v.(*mcp.GetPromptResult), nil
	}
}

// resourceHandler forwards resources/read, through the cache: a read is
// what the protocol treats as cacheable, and resources/updated or
// list_changed from the child invalidates it.
func (h *Hub) resourceHandler(c *child) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		var key *cache.Key
		if k, err := cache.KeyOf(c.name, "resources/read", req.Params.URI, req.Params); err == nil {
			key = &k
		}
		v, err := h.forward(ctx, c, "resources/read", req.Params.URI, key, func(ctx context.Context, cl *client.Client) (any, error) {
			res, err := cl.ReadResource(ctx, req)
			if err != nil {
				return nil, err
			}
			return res.Contents, nil
		})
		if err != nil {
			return nil, err
		}
		return v.([]mcp.ResourceContents), nil
	}
}
