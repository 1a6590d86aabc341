package gateway

import (
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers"
	"lmtool.dev/lm/pkg/servers/client"
	"lmtool.dev/lm/pkg/servers/enhance"
)

// otherRoute describes, for the OpenAPI document and /docs, a route that is
// not an operation's: the hub's (spec 004), spec 002's tool protocol,
// prompt enhancement and the MCP endpoints. TestEveryDocumentedRouteIsServed
// keeps the list true to the router.
type otherRoute struct {
	method, path, summary string
	status                int
	in, out               *jsonschema.Schema // request and response bodies, when JSON
	stream                bool               // the response is text/event-stream
	rpc                   bool               // the body is MCP JSON-RPC
}

func schemaOf[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err) // the types are fixed at build time
	}
	return s
}

// otherRoutes is built on first use: reflecting the types costs start-up
// time every lm command would pay.
func otherRoutes() []otherRoute {
	status, health, thread := schemaOf[servers.Status](), schemaOf[servers.Health](), schemaOf[client.Thread]()
	return []otherRoute{
		{method: "GET", path: "/health", summary: "Every service's state: each configured MCP server, the model endpoint behind enhancement and its cache; degraded when an enabled auto-start server is not healthy or a configured model does not answer", status: 200, out: health},
		{method: "GET", path: "/health/{server}", summary: "One server's state; 503 when it is not healthy", status: 200, out: status},
		{method: "GET", path: "/servers", summary: "Servers with state, breaker, restarts and last error, and the cache's statistics", status: 200, out: schemaOf[servers.StatusOutput]()},
		{method: "GET", path: "/servers/{server}", summary: "One server's state", status: 200, out: status},
		{method: "POST", path: "/servers/{server}/start", summary: "Start a server; answers once it runs or failed", status: 200, out: status},
		{method: "POST", path: "/servers/{server}/restart", summary: "Stop and start a server", status: 200, out: status},
		{method: "POST", path: "/servers/{server}/stop", summary: "Stop a server (SIGTERM, then SIGKILL to its process group)", status: 200, out: status},
		{method: "DELETE", path: "/servers/{server}", summary: "Remove a server from servers.json, stopping it", status: 204},
		{method: "POST", path: "/servers/install", summary: "Install an npm package as a server", status: 201, in: schemaOf[servers.InstallInput](), out: schemaOf[servers.InstallOutput]()},
		{method: "POST", path: "/servers/reload", summary: "Re-read servers.json now (the gateway also watches it)", status: 204},
		{method: "GET", path: "/servers/events", summary: "Live server states and proxied-call activity, as Server-Sent Events", status: 200, stream: true},
		{method: "GET", path: "/cache", summary: "The response cache's statistics", status: 200, out: schemaOf[servers.CacheStats]()},
		{method: "DELETE", path: "/cache", summary: "Empty the response cache", status: 200, out: schemaOf[servers.CacheStats]()},
		{method: "POST", path: "/ollama/enhance", summary: "Enhance a prompt by the rules for the X-Client-Name header's client; the original comes back unchanged when the model is down", status: 200, in: schemaOf[enhance.Request](), out: schemaOf[enhance.Result]()},
		{method: "GET", path: "/api/ask/thread/{session}", summary: "The Ask view's conversation for a page session: {turns, updated_at}; the person's token only", status: 200, out: thread},
		{method: "PUT", path: "/api/ask/thread/{session}", summary: "Replace a page session's Ask conversation with {\"turns\": [objects]}; the oldest turns beyond 1 MiB are dropped (dropped counts them)", status: 200, out: thread},
		{method: "DELETE", path: "/api/ask/thread/{session}", summary: "Clear a page session's Ask conversation", status: 204},
		{method: "POST", path: "/api/tickets", summary: "Trade the bearer token for a ticket {ticket, expires_at}: a client that cannot send headers (a browser's EventSource) opens one event stream (/sse, /api/events, /servers/events) with ?ticket=, once, within 30 seconds, as the token's caller", status: 201},
		{method: "GET", path: "/info", summary: "Spec 002: the server's name, version and endpoints", status: 200},
		{method: "GET", path: "/tools", summary: "Spec 002: every tool the gateway serves, with its parameters' schema", status: 200},
		{method: "GET", path: "/sse", summary: "Spec 002: a stream that opens with a connected event carrying the clientId, then tool_result events", status: 200, stream: true},
		{method: "POST", path: "/messages", summary: "Spec 002: run {clientId, tool, parameters}; 202, the result arrives as a tool_result event on the client's stream", status: 202, in: schemaOf[message]()},
		{method: "POST", path: "/mcp", summary: "MCP streamable HTTP: lm's tools and every enabled server's tools, prompts and resources as server__name", status: 200, rpc: true},
		{method: "POST", path: "/mcp/{server}", summary: "MCP streamable HTTP for one configured server, started on first use when auto_start", status: 200, rpc: true},
		{method: "POST", path: "/mcp/{server}/{method}", summary: "One JSON-RPC call to a configured server without an MCP session (POST /mcp/NAME/tools/call): the body is the call's params, or a whole request for that method", status: 200, rpc: true},
		{method: "GET", path: "/mcp/sse", summary: "MCP legacy HTTP+SSE transport: the event stream", status: 200, stream: true},
		{method: "POST", path: "/mcp/message", summary: "MCP legacy HTTP+SSE transport: a message for a session of /mcp/sse", status: 202, rpc: true},
	}
}

// describe adds rt to the OpenAPI paths.
func (rt otherRoute) describe(paths map[string]map[string]any, errorResponse func(string) map[string]any) {
	operation := map[string]any{
		"operationId": strings.ToLower(rt.method) + strings.NewReplacer("/", "_", "{", "", "}", "").Replace(rt.path),
		"summary":     rt.summary,
		"responses": map[string]any{
			"401": errorResponse("missing or wrong bearer token (when the gateway has one)"),
			"403": errorResponse("foreign Origin or Host"),
		},
	}
	responses := operation["responses"].(map[string]any)
	ok := map[string]any{"description": "ok"}
	switch {
	case rt.stream:
		ok["content"] = map[string]any{"text/event-stream": map[string]any{}}
	case rt.rpc:
		ok["content"] = map[string]any{"application/json": map[string]any{}, "text/event-stream": map[string]any{}}
	case rt.out != nil:
		ok["content"] = jsonContent(rt.out)
	}
	responses[strconv.Itoa(rt.status)] = ok
	if strings.Contains(rt.path, "{server}") {
		responses["404"] = errorResponse("no server of that name")
	}
	var params []map[string]any
	for _, name := range (op.Route{Path: rt.path}).Wildcards() {
		params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
	}
	if params != nil {
		operation["parameters"] = params
	}
	switch {
	case rt.in != nil:
		operation["requestBody"] = map[string]any{"required": true, "content": jsonContent(rt.in)}
	case rt.rpc:
		operation["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{}}}
	}
	if paths[rt.path] == nil {
		paths[rt.path] = map[string]any{}
	}
	paths[rt.path][strings.ToLower(rt.method)] = operation
}
