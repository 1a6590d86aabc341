package hub

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"lmtool.dev/lm/pkg/servers/cache"
)

// anyResource is the template under which /mcp reads every server's
// resource: the listed ones, those its templates expand to, those a tool
// links to, or any other the server knows by URI. It is listed too, so a
// client given a server's own URI (in a tool's text, say) can read it.
var anyResource = mcp.NewResourceTemplate(ResourceScheme+"://{server}/{+uri}", "server-resource",
	mcp.WithTemplateDescription("A resource of a server lm's gateway supervises, by the server's own URI for it: "+
		ResourceScheme+"://SERVER/URI. The servers' resources and templates are listed under such URIs."))

// serveResources sets up /mcp for the servers' resources: the template
// that routes their reads, and the listing of their templates. The
// servers' templates are added to each templates/list answer rather than
// registered: a server that goes takes its templates with it, and the MCP
// server has no way to remove one.
func (h *Hub) serveResources() {
	h.aggregate.AddResourceTemplate(anyResource, h.readAggregated)
	hooks := h.aggregate.GetHooks()
	if hooks == nil {
		hooks = &server.Hooks{}
		server.WithHooks(hooks)(h.aggregate)
	}
	hooks.AddAfterListResourceTemplates(func(_ context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
		// Once, on the last page.
		if res.NextCursor == "" {
			res.ResourceTemplates = append(res.ResourceTemplates, h.templates()...)
		}
	})
}

// templates are the running servers' templates as /mcp lists them, in
// name order.
func (h *Hub) templates() []mcp.ResourceTemplate {
	h.mu.Lock()
	children := make([]*child, 0, len(h.children))
	for _, c := range h.children {
		children = append(children, c)
	}
	h.mu.Unlock()
	var out []mcp.ResourceTemplate
	for _, c := range children {
		c.mu.Lock()
		out = append(out, c.mirrored.aggTemplates...)
		c.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b mcp.ResourceTemplate) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// templatesChanged tells /mcp's clients that its templates changed; the
// MCP server does not know, as it does not hold them.
func (h *Hub) templatesChanged() {
	h.aggregate.SendNotificationToAllClients(mcp.MethodNotificationResourcesListChanged, nil)
}

// readAggregated serves resources/read on /mcp: the URI names the server
// and carries the server's own URI, which is read as the server's own
// endpoint would read it, and the contents come back under /mcp's URIs.
func (h *Hub) readAggregated(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	name, uri, err := SplitURI(req.Params.URI)
	if err != nil {
		return nil, err
	}
	c := h.child(name)
	if c == nil {
		return nil, fmt.Errorf("resource URI %q names no configured server %q; resources/list shows the servers' resources", req.Params.URI, name)
	}
	if !c.config().IsEnabled() {
		return nil, fmt.Errorf("resource URI %q: server %s is disabled", req.Params.URI, name)
	}
	req.Params.URI = uri
	contents, err := h.resourceHandler(c)(ctx, req)
	if err != nil {
		return nil, err
	}
	return namespacedContents(name, contents), nil
}

// resourceHandler forwards resources/read, through the cache only for the
// URIs the person listed in cache_resources: a resource may embed the time
// or a file's current text, and serving it stale for cache_ttl would be
// wrong. resources/updated or list_changed from the child invalidates what
// is cached.
func (h *Hub) resourceHandler(c *child) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		// Arguments are what a template matched here, not the client's.
		req.Params.Arguments = nil
		var key *cache.Key
		if c.config().CachesResource(req.Params.URI) {
			if k, err := cache.KeyOf(c.name, "resources/read", req.Params.URI, req.Params); err == nil {
				key = &k
			}
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
