package hub

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// ResourceScheme is the scheme of the servers' resource URIs on /mcp.
const ResourceScheme = "lm-server"

// NamespacedURI is a server's resource URI as /mcp shows it:
// lm-server://SERVER/URI, the server's own URI appended verbatim.
//
// Appended rather than percent-encoded, because the server's URI templates
// must survive: a template gains only a literal prefix, so whatever a
// client expands it to is the prefix followed by exactly what the server's
// own template gives, and cutting the prefix recovers it. (An encoded
// template cannot be expanded faithfully: a value's %2F would decode to a
// slash.) The result is an RFC 3986 URI whenever the server's is: a server
// name ([A-Za-z0-9_-]) is a reg-name, the original's "scheme:" and "//"
// become path segments, which path-abempty allows after an authority, and
// its query and fragment stay a query and a fragment.
func NamespacedURI(server, uri string) string {
	return ResourceScheme + "://" + server + "/" + uri
}

// SplitURI undoes NamespacedURI. The error says what was wrong and what
// is accepted.
func SplitURI(uri string) (server, original string, err error) {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok || !strings.EqualFold(scheme, ResourceScheme) {
		return "", "", fmt.Errorf("resource URI %q is not a server's: those on /mcp are %s://SERVER/URI", uri, ResourceScheme)
	}
	server, original, ok = strings.Cut(rest, "/")
	if !ok || server == "" || original == "" {
		return "", "", fmt.Errorf("resource URI %q names no server or no resource: expected %s://SERVER/URI, URI being the server's own", uri, ResourceScheme)
	}
	return server, original, nil
}

// namespacedContents are a server's resource contents with their URIs as
// /mcp shows them. The slice is new: the cache keeps the server's own.
func namespacedContents(server string, contents []mcp.ResourceContents) []mcp.ResourceContents {
	out := make([]mcp.ResourceContents, len(contents))
	for i, rc := range contents {
		switch rc := rc.(type) {
		case mcp.TextResourceContents:
			rc.URI = NamespacedURI(server, rc.URI)
			out[i] = rc
		case mcp.BlobResourceContents:
			rc.URI = NamespacedURI(server, rc.URI)
			out[i] = rc
		default:
			out[i] = rc
		}
	}
	return out
}

// namespacedContent is a tool's or prompt's content item with the URI of
// a resource link or embedded resource as /mcp shows it, so a client can
// read what a tool pointed at.
func namespacedContent(server string, c mcp.Content) mcp.Content {
	switch c := c.(type) {
	case mcp.ResourceLink:
		c.URI = NamespacedURI(server, c.URI)
		return c
	case mcp.EmbeddedResource:
		c.Resource = namespacedContents(server, []mcp.ResourceContents{c.Resource})[0]
		return c
	}
	return c
}

// namesResource reports whether a content item carries a resource URI.
func namesResource(c mcp.Content) bool {
	switch c.(type) {
	case mcp.ResourceLink, mcp.EmbeddedResource:
		return true
	}
	return false
}

// namespacedToolResult is a tool's result as /mcp returns it: a copy,
// since the cache holds the server's own, or the result itself when it
// names no resource (the common case, on every call's path).
func namespacedToolResult(server string, r *mcp.CallToolResult) *mcp.CallToolResult {
	if !slices.ContainsFunc(r.Content, namesResource) {
		return r
	}
	out := *r
	out.Content = make([]mcp.Content, len(r.Content))
	for i, c := range r.Content {
		out.Content[i] = namespacedContent(server, c)
	}
	return &out
}

// namespacedPromptResult is a prompt's messages as /mcp returns them.
func namespacedPromptResult(server string, r *mcp.GetPromptResult) *mcp.GetPromptResult {
	out := *r
	out.Messages = make([]mcp.PromptMessage, len(r.Messages))
	for i, m := range r.Messages {
		m.Content = namespacedContent(server, m.Content)
		out.Messages[i] = m
	}
	return &out
}

// namespacedUpdate is a notifications/resources/updated from a server as
// /mcp relays it.
func namespacedUpdate(server string, params map[string]any) map[string]any {
	out := maps.Clone(params)
	if uri, ok := params["uri"].(string); ok {
		out["uri"] = NamespacedURI(server, uri)
	}
	return out
}
