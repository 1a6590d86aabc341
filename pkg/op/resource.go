package op

import (
	"context"
	"net/url"
)

// Resource is data an MCP client reads by URI (resources/read), such as a
// job's status at job://ID. Like an operation it is defined next to its
// domain; pkg/mcpx serves every registered resource.
type Resource struct {
	// URITemplate is the RFC 6570 template of the resource's URIs
	// ("job://{id}"), or a fixed URI ("tasks://cwd").
	URITemplate string
	// Group is the group whose `lm mcp --only` selection includes it.
	Group       string
	Name        string
	Description string
	// MIMEType of what Read returns; Read's value is sent as JSON text.
	MIMEType string
	// Read answers a request for uri.
	Read func(ctx context.Context, env *Env, uri *url.URL) (any, error)
}
