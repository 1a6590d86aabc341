package gateway

import (
	"encoding/json"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/op"
)

// openAPI is GET /openapi.json: the API described from the operations'
// routes and their own input and output schemas, so it cannot drift from
// what the handlers accept.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.openAPIDocument())
}

func (s *Server) openAPIDocument() map[string]any {
	envelope, _ := jsonschema.For[op.Envelope](nil)
	errorResponse := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": jsonContent(envelope)}
	}
	paths := map[string]map[string]any{}
	for _, rt := range s.api {
		rt.describe(paths, errorResponse)
	}
	paths["/api/events"] = map[string]any{"get": map[string]any{
		"operationId": "get_events",
		"summary":     "Live queue events (Server-Sent Events)",
		"description": "Event names: instruction.created, instruction.updated, instruction.deleted, instruction.consumed, status.changed, config.updated; " +
			"data is {id, type, timestamp, data} with the full item. Stored events carry an SSE id: reconnect with Last-Event-ID (or ?since=ID) to get what was missed. " +
			"Send the status's store_id as Last-Event-Store (or ?store=) with it. status.changed without an id is an agent turning idle. " +
			"\"resync\" ({reason, latest_event_id}) means the state cannot be caught up event by event — events expired, the id was never issued by this store, " +
			"or the store is another one: reload the state.",
		"parameters": []map[string]any{
			{"name": "since", "in": "query", "schema": map[string]any{"type": "integer", "minimum": 0}},
			{"name": "store", "in": "query", "schema": map[string]any{"type": "string"}},
		},
		"responses": map[string]any{"200": map[string]any{"description": "an event stream", "content": map[string]any{"text/event-stream": map[string]any{}}}},
	}}
	for _, rt := range otherRoutes() {
		rt.describe(paths, errorResponse)
	}
	paths["/healthz"] = map[string]any{"get": map[string]any{
		"operationId": "healthz", "summary": "Liveness: {status, server_time}; never needs the token",
		"responses": map[string]any{"200": map[string]any{"description": "ok"}},
	}}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "lm gateway",
			"version":     s.opts.Version,
			"description": "The instruction queue's HTTP API, the MCP client behind the page's Ask view, the hub of MCP servers (spec 004), spec 002's tool protocol, and the MCP endpoints themselves (/mcp, /mcp/{server}, /mcp/sse).",
		},
		"components": map[string]any{"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}}},
		"security":   []map[string]any{{"bearer": []string{}}},
		"paths":      paths,
	}
}

// describe adds an operation's route to the OpenAPI paths: its path
// wildcards as path parameters, its body or its query parameters from the
// operation's input schema, its success from the output schema.
func (rt apiRoute) describe(paths map[string]map[string]any, errorResponse func(string) map[string]any) {
	in, info := rt.op.InputSchema(), rt.op.Info()
	var params []map[string]any
	for _, name := range rt.Wildcards() {
		params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": schemaProp(in, name)})
	}
	operation := map[string]any{
		"operationId": strings.ToLower(rt.Method) + "_" + info.Name,
		"summary":     rt.summary(),
		"description": info.Summary + ". Same operation as `lm " + strings.Join(info.Path, " ") + "` and the MCP tool `" + info.Name + "`.",
		"responses": map[string]any{
			"400": errorResponse("malformed request body"),
			"401": errorResponse("missing or wrong bearer token (when the gateway has one)"),
			"403": errorResponse("foreign Origin or Host"),
			"422": errorResponse("invalid input: the error says what is accepted"),
			"503": errorResponse("the store is locked by another process"),
		},
	}
	responses := operation["responses"].(map[string]any)
	if status := rt.SuccessStatus(); status == http.StatusNoContent {
		responses["204"] = map[string]any{"description": "done"}
	} else {
		responses[strconv.Itoa(status)] = map[string]any{"description": "ok", "content": jsonContent(rt.op.OutputSchema())}
	}
	if strings.Contains(rt.Path, "{id}") {
		responses["404"] = errorResponse("no such instruction")
	}
	if rt.Method != http.MethodGet && strings.Contains(rt.Path, "{id}") {
		responses["409"] = errorResponse("the instruction was already consumed")
	}
	if rt.Body {
		operation["requestBody"] = map[string]any{"required": true, "content": jsonContent(op.WithoutFields(in, rt.notInBody()))}
	} else {
		for _, name := range op.FieldNames(in) {
			if !slices.Contains(rt.Wildcards(), name) {
				params = append(params, map[string]any{"name": name, "in": "query", "schema": in.Properties[name]})
			}
		}
	}
	if params != nil {
		operation["parameters"] = params
	}
	if paths[rt.Path] == nil {
		paths[rt.Path] = map[string]any{}
	}
	paths[rt.Path][strings.ToLower(rt.Method)] = operation
}

func jsonContent(schema *jsonschema.Schema) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

var docsPage = template.Must(template.New("docs").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>lm gateway — API</title><link rel="stylesheet" href="/assets/app.css"></head>
<body class="docs"><main class="docs-main">
<header class="docs-head"><a class="wordmark" href="/">lm<span>·</span>desk</a><h1>HTTP API</h1>
<p>Each route under <code>/api</code> calls the same operation as the CLI and the MCP tool named beside it. Errors are JSON:
<code>{"success": false, "error", "error_category", "recoverable", "suggestion", "exit_code"}</code>.
Machine-readable: <a href="/openapi.json">/openapi.json</a>. MCP: <code>/mcp</code> (streamable HTTP), <code>/mcp/sse</code> (legacy SSE).</p></header>
{{range .}}<section class="docs-route"><h2><span class="verb verb-{{.Method}}">{{.Method}}</span> <code>{{.Path}}</code></h2>
<p>{{.Summary}}{{if .Tool}} — <code>{{.Tool}}</code> (<code>lm {{.CLI}}</code>){{end}}. Success: {{.Status}}.</p>
{{if .Input}}<details><summary>Input schema</summary><pre>{{.Input}}</pre></details>{{end}}
{{if .Output}}<details><summary>Output schema</summary><pre>{{.Output}}</pre></details>{{end}}
</section>{{end}}
</main></body></html>`))

// docs is GET /docs: the same description as a page to read.
func (s *Server) docs(w http.ResponseWriter, r *http.Request) {
	type entry struct {
		Method, Path, Summary, Tool, CLI, Input, Output string
		Status                                          int
	}
	var entries []entry
	for _, rt := range s.api {
		e := entry{Method: rt.Method, Path: rt.Path, Summary: rt.summary(), Tool: rt.tool(), CLI: strings.Join(rt.op.Info().Path, " "),
			Status: rt.SuccessStatus(), Input: indent(op.WithoutFields(rt.op.InputSchema(), rt.notInBody()))}
		if rt.SuccessStatus() != http.StatusNoContent {
			e.Output = indent(rt.op.OutputSchema())
		}
		entries = append(entries, e)
	}
	entries = append(entries,
		entry{Method: "GET", Path: "/api/events", Status: 200, Summary: "Live events as Server-Sent Events; resume with Last-Event-ID or ?since=ID"},
		entry{Method: "GET", Path: "/healthz", Status: 200, Summary: "Liveness, without the token"})
	for _, rt := range otherRoutes() {
		e := entry{Method: rt.method, Path: rt.path, Summary: rt.summary, Status: rt.status}
		if rt.in != nil {
			e.Input = indent(rt.in)
		}
		if rt.out != nil {
			e.Output = indent(rt.out)
		}
		entries = append(entries, e)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := docsPage.Execute(w, entries); err != nil {
		s.opts.Log.Warn("render /docs", "err", err)
	}
}

func indent(schema *jsonschema.Schema) string {
	data, _ := json.MarshalIndent(schema, "", "  ")
	return string(data)
}
