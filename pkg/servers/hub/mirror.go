package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/yosida95/uritemplate/v3"

	"lmtool.dev/lm/pkg/mcpschema"
	"lmtool.dev/lm/pkg/mcpx"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers/cache"
)

// mirrored records what a child's lists put on the endpoints, so the next
// refresh can take it off again.
type mirrored struct {
	tools, prompts, resources          []string // upstream names and URIs
	aggTools, aggPrompts, aggResources []string // as registered on /mcp
	// upstream is the server's name of each of aggTools.
	upstream map[string]string
	// aggTemplates are listed on /mcp by the hub itself (see serveResources).
	aggTemplates []mcp.ResourceTemplate
	collisions   []string
	// unlisted are tools left off /mcp because clients reject their
	// schemas, with the reason.
	unlisted []string
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

// schemaProblems lists what MCP clients reject in a tool's schemas.
func schemaProblems(t mcp.Tool) []string {
	raw, err := json.Marshal(t)
	if err != nil {
		return []string{err.Error()}
	}
	return mcpschema.ToolProblems(raw)
}

// mirror lists a child's tools, prompts and resources and registers them
// on its own endpoint and, namespaced, on /mcp. The registrations send
// list_changed to the endpoints' clients.
func (h *Hub) mirror(ctx context.Context, c *child, cl *client.Client) error {
	l, err := h.list(ctx, c, cl)
	if err != nil {
		return err
	}
	// A session that ended while its lists were being read must not put
	// its tools back.
	h.mirrorMu.Lock()
	defer h.mirrorMu.Unlock()
	c.mu.Lock()
	live := c.live == cl
	before := c.mirrored
	c.mu.Unlock()
	if !live {
		return nil
	}
	var m mirrored
	h.mirrorOwn(c, l, &m)
	if h.aggregate != nil {
		names := newClaims(before)
		tools := h.aggregateTools(c, l.tools, names, &m)
		prompts := h.aggregatePrompts(c, l.prompts, names, &m)
		resources := h.aggregateResources(c, l.resources, names, &m)
		h.aggregateTemplates(c, l.templates, names, &m)
		h.replaceOnAggregate(before, m, tools, prompts, resources)
		for _, col := range m.collisions {
			h.log.Warn("name collision on /mcp: not exposed there", "server", c.name, "what", col)
		}
		for _, u := range m.unlisted {
			h.log.Warn("tool left off /mcp: MCP clients reject its schema", "server", c.name, "tool", u)
		}
	}
	c.mu.Lock()
	hadTemplates := len(c.mirrored.aggTemplates) > 0
	c.mirrored = m
	c.mu.Unlock()
	if hadTemplates || len(m.aggTemplates) > 0 {
		h.templatesChanged()
	}
	h.notifyChange()
	return nil
}

// lists are what a server offers, as its list requests answered.
type lists struct {
	tools     []mcp.Tool // those its configuration exposes
	prompts   []mcp.Prompt
	resources []mcp.Resource
	templates []mcp.ResourceTemplate // those with a template that parsed
}

// list reads the lists of each capability the server declares, within its
// call timeout. A failed list fails the mirror, except templates/list,
// which servers that predate templates do not answer: they keep their
// resources, and the failure is logged.
func (h *Hub) list(ctx context.Context, c *child, cl *client.Client) (lists, error) {
	var l lists
	caps := cl.GetServerCapabilities()
	cfg := c.config()
	lctx, cancel := context.WithTimeout(ctx, cfg.CallTimeout())
	defer cancel()
	if caps.Tools != nil {
		res, err := cl.ListTools(lctx, mcp.ListToolsRequest{})
		if err != nil {
			return l, fmt.Errorf("tools/list: %w", err)
		}
		for _, t := range res.Tools {
			if cfg.Exposes(t.Name) {
				l.tools = append(l.tools, t)
			}
		}
	}
	if caps.Prompts != nil {
		res, err := cl.ListPrompts(lctx, mcp.ListPromptsRequest{})
		if err != nil {
			return l, fmt.Errorf("prompts/list: %w", err)
		}
		l.prompts = res.Prompts
	}
	if caps.Resources != nil {
		res, err := cl.ListResources(lctx, mcp.ListResourcesRequest{})
		if err != nil {
			return l, fmt.Errorf("resources/list: %w", err)
		}
		l.resources = res.Resources
		tres, err := cl.ListResourceTemplates(lctx, mcp.ListResourceTemplatesRequest{})
		if err != nil {
			h.log.Warn("resources/templates/list failed; the server's templates are not served", "server", c.name, "err", err)
		} else {
			for _, t := range tres.ResourceTemplates {
				if t.URITemplate != nil && t.URITemplate.Template != nil {
					l.templates = append(l.templates, t)
				}
			}
		}
	}
	return l, nil
}

// mirrorOwn puts the lists, as the server gave them, on its own endpoint
// (replacing what was there) and records their upstream names in m.
func (h *Hub) mirrorOwn(c *child, l lists, m *mirrored) {
	var tools []server.ServerTool
	for _, t := range l.tools {
		tools = append(tools, server.ServerTool{Tool: t, Handler: h.toolHandler(c, c.own, t.Name)})
		m.tools = append(m.tools, t.Name)
	}
	var prompts []server.ServerPrompt
	for _, p := range l.prompts {
		prompts = append(prompts, server.ServerPrompt{Prompt: p, Handler: h.promptHandler(c, c.own, p.Name)})
		m.prompts = append(m.prompts, p.Name)
	}
	var resources []server.ServerResource
	for _, r := range l.resources {
		resources = append(resources, server.ServerResource{Resource: r, Handler: h.resourceHandler(c)})
		m.resources = append(m.resources, r.URI)
	}
	var templates []server.ServerResourceTemplate
	for _, t := range l.templates {
		templates = append(templates, server.ServerResourceTemplate{Template: t, Handler: server.ResourceTemplateHandlerFunc(h.resourceHandler(c))})
	}
	c.own.SetTools(tools...)
	c.own.SetPrompts(prompts...)
	c.own.SetResources(resources...)
	c.own.SetResourceTemplates(templates...)
}

// claims decides which names a server's lists may take on /mcp. The
// server's earlier names stay on /mcp until they are replaced, so a
// refresh (on its list_changed) never fails a call to a tool it still has;
// they are not collisions. Two of the server's own names may sanitise to
// the same one, so names taken in this refresh count as well as those on
// /mcp.
type claims struct {
	ours  map[string]map[string]bool // by kind: the names the server held before
	taken map[string]map[string]bool // by kind: the names taken in this refresh
}

func newClaims(before mirrored) claims {
	return claims{
		ours:  map[string]map[string]bool{"tool": set(before.aggTools), "prompt": set(before.aggPrompts), "resource": set(before.aggResources)},
		taken: map[string]map[string]bool{"tool": {}, "prompt": {}, "resource": {}, "resource template": {}},
	}
}

// claim takes name, the server's upstream under its name on /mcp, for the
// server, unless this refresh took it already or something else holds it
// on /mcp (onAggregate, and not the server's): then it is a collision,
// recorded in m.
func (cl claims) claim(m *mirrored, kind, upstream, name string, onAggregate bool) bool {
	if cl.taken[kind][name] || (onAggregate && !cl.ours[kind][name]) {
		m.collisions = append(m.collisions, fmt.Sprintf("%s %s (as %s)", kind, upstream, name))
		return false
	}
	cl.taken[kind][name] = true
	return true
}

// aggregateTools are the server's tools as /mcp registers them:
// namespaced, calling the server under their upstream names. A tool whose
// schema a strict client rejects is left off (m.unlisted), since it would
// make that client reject the whole list, lm's own tools included; the
// server's own endpoint keeps it as given. A name something else holds is
// a collision.
func (h *Hub) aggregateTools(c *child, tools []mcp.Tool, names claims, m *mirrored) []server.ServerTool {
	var out []server.ServerTool
	for _, t := range tools {
		if problems := schemaProblems(t); len(problems) > 0 {
			m.unlisted = append(m.unlisted, fmt.Sprintf("%s: %s", t.Name, strings.Join(problems, "; ")))
			continue
		}
		name := Namespaced(c.name, t.Name)
		if !names.claim(m, "tool", t.Name, name, h.aggregate.GetTool(name) != nil) {
			continue
		}
		upstream := t.Name
		t.Name = name
		out = append(out, server.ServerTool{Tool: t, Handler: h.toolHandler(c, h.aggregate, upstream)})
		m.aggTools = append(m.aggTools, name)
		if m.upstream == nil {
			m.upstream = map[string]string{}
		}
		m.upstream[name] = upstream
	}
	return out
}

// aggregatePrompts are the server's prompts as /mcp registers them:
// namespaced, getting the server's prompt under its upstream name.
func (h *Hub) aggregatePrompts(c *child, prompts []mcp.Prompt, names claims, m *mirrored) []server.ServerPrompt {
	existing := h.aggregate.ListPrompts()
	var out []server.ServerPrompt
	for _, p := range prompts {
		name := Namespaced(c.name, p.Name)
		if !names.claim(m, "prompt", p.Name, name, existing[name] != nil) {
			continue
		}
		upstream := p.Name
		p.Name = name
		out = append(out, server.ServerPrompt{Prompt: p, Handler: h.promptHandler(c, h.aggregate, upstream)})
		m.aggPrompts = append(m.aggPrompts, name)
	}
	return out
}

// aggregateResources are the server's resources as /mcp registers them:
// under lm-server://SERVER/URI (NamespacedURI), read through
// readAggregated.
func (h *Hub) aggregateResources(c *child, resources []mcp.Resource, names claims, m *mirrored) []server.ServerResource {
	existing := h.aggregate.ListResources()
	var out []server.ServerResource
	for _, r := range resources {
		uri := NamespacedURI(c.name, r.URI)
		if !names.claim(m, "resource", r.URI, uri, existing[uri] != nil) {
			continue
		}
		r.URI, r.Name = uri, Namespaced(c.name, r.Name)
		out = append(out, server.ServerResource{Resource: r, Handler: h.readAggregated})
		m.aggResources = append(m.aggResources, uri)
	}
	return out
}

// aggregateTemplates records in m.aggTemplates the server's resource
// templates as /mcp lists them (the hub lists them itself, see
// serveResources): each with the literal prefix of NamespacedURI.
func (h *Hub) aggregateTemplates(c *child, templates []mcp.ResourceTemplate, names claims, m *mirrored) {
	for _, t := range templates {
		raw := NamespacedURI(c.name, t.URITemplate.Raw())
		tpl, err := uritemplate.New(raw)
		if err != nil { // not expected: a literal prefix to a template that parsed
			h.log.Warn("resource template not served on /mcp", "server", c.name, "template", raw, "err", err)
			continue
		}
		if !names.claim(m, "resource template", t.URITemplate.Raw(), raw, false) {
			continue
		}
		t.URITemplate, t.Name = &mcp.URITemplate{Template: tpl}, Namespaced(c.name, t.Name)
		m.aggTemplates = append(m.aggTemplates, t)
	}
}

// replaceOnAggregate registers the new names on /mcp first and then takes
// off those the server no longer has, so a name it keeps is never missing.
func (h *Hub) replaceOnAggregate(before, now mirrored, tools []server.ServerTool, prompts []server.ServerPrompt, resources []server.ServerResource) {
	if len(tools) > 0 {
		h.aggregate.AddTools(tools...)
	}
	if len(prompts) > 0 {
		h.aggregate.AddPrompts(prompts...)
	}
	if len(resources) > 0 {
		h.aggregate.AddResources(resources...)
	}
	if gone := dropped(before.aggTools, now.aggTools); len(gone) > 0 {
		h.aggregate.DeleteTools(gone...)
	}
	if gone := dropped(before.aggPrompts, now.aggPrompts); len(gone) > 0 {
		h.aggregate.DeletePrompts(gone...)
	}
	if gone := dropped(before.aggResources, now.aggResources); len(gone) > 0 {
		h.aggregate.DeleteResources(gone...)
	}
}

func set(names []string) map[string]bool {
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out
}

// dropped are the names of before that now lacks.
func dropped(before, now []string) []string {
	kept := set(now)
	var out []string
	for _, n := range before {
		if !kept[n] {
			out = append(out, n)
		}
	}
	return out
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
	c.own.SetResourceTemplates()
	c.mu.Lock()
	hadTemplates := len(c.mirrored.aggTemplates) > 0
	c.live, c.mirrored = nil, mirrored{}
	c.mu.Unlock()
	if hadTemplates {
		h.templatesChanged()
	}
	h.notifyChange()
}

// toolHandler forwards a tools/call to the child under its upstream name,
// for endpoint (/mcp or the server's own). A progress token is swapped for one unique to the hub, so progress from
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
		if op.KindOf(err) == op.KindTimeout {
			// The tool ran out of time: a result the model can read, with
			// lm's envelope (category timeout, exit 7).
			return mcpx.ErrorResult(err), nil
		}
		if err != nil {
			return nil, err
		}
		// On /mcp, a link to one of the server's resources must be one a
		// client can read there.
		if endpoint == h.aggregate {
			return namespacedToolResult(c.name, v.(*mcp.CallToolResult)), nil
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

// promptHandler forwards a prompts/get; on /mcp, resources the messages
// embed or link to are named as /mcp names them.
func (h *Hub) promptHandler(c *child, endpoint *server.MCPServer, upstream string) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		req.Params.Name = upstream
		v, err := h.forward(ctx, c, "prompts/get", upstream, nil, func(ctx context.Context, cl *client.Client) (any, error) {
			return cl.GetPrompt(ctx, req)
		})
		if err != nil {
			return nil, err
		}
		if endpoint == h.aggregate {
			return namespacedPromptResult(c.name, v.(*mcp.GetPromptResult)), nil
		}
		return v.(*mcp.GetPromptResult), nil
	}
}
