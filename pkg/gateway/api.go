package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/httpjson"
	"lmtool.dev/lm/pkg/op"
)

// route maps an HTTP method and path onto an operation. The operation's
// input is the JSON body, plus the path's {wildcards} and the query
// parameters as fields of the same names; its output is the response body.
type route struct {
	method, path string
	tool         string // the operation's MCP tool name
	summary      string // for the OpenAPI document
	status       int    // on success; 204 sends no body
	body         bool   // the request has a JSON body
	// person: only the person may use the route. Running a tool call is
	// the page's Approve, which an agent's token never stands in for.
	person bool
}

// notInBody are the operation's fields a route's body does not take: those
// its path gives and those of the command line only.
func (rt route) notInBody(o op.Operation) []string {
	return append(wildcards(rt.path), o.Info().CLIFields...)
}

// apiRoutes are spec 000 §5.2's HTTP API, plus reading one instruction and
// reordering the pending queue; the servers' configuration the page's Servers
// view changes (person-only operations, which refuse agents' tokens); and the
// MCP client behind the page's Ask view, which reaches configured servers (or
// URLs) only: a stdio command is refused off the command line.
var apiRoutes = []route{
	{method: "GET", path: "/api/status", tool: "queue_status", summary: "Server, agent, queue and settings summary", status: 200},
	{method: "GET", path: "/api/instructions", tool: "queue_list", summary: "Instructions in queue order (?status=pending|consumed|all)", status: 200},
	{method: "POST", path: "/api/instructions", tool: "queue_add", summary: "Add a pending instruction", status: 201, body: true},
	{method: "GET", path: "/api/instructions/{id}", tool: "queue_show", summary: "One instruction", status: 200},
	{method: "PATCH", path: "/api/instructions/{id}", tool: "queue_edit", summary: "Edit a pending instruction (409 once consumed)", status: 200, body: true},
	{method: "DELETE", path: "/api/instructions/{id}", tool: "queue_rm", summary: "Delete a pending instruction (409 once consumed)", status: 204},
	{method: "POST", path: "/api/instructions/{id}/move", tool: "queue_move", summary: "Move a pending instruction to position {\"to\": N}", status: 200, body: true},
	{method: "POST", path: "/api/instructions/{id}/requeue", tool: "queue_requeue", summary: "Put a consumed instruction back at the head of the queue (409 while pending)", status: 200},
	{method: "GET", path: "/api/config", tool: "queue_config", summary: "The editable settings", status: 200},
	{method: "PATCH", path: "/api/config", tool: "queue_config", summary: "Change settings (\"default_empty_response\": null clears it)", status: 200, body: true},
	{method: "GET", path: "/api/servers", tool: "servers_list", summary: "The configured MCP servers", status: 200},
	{method: "POST", path: "/api/servers", tool: "servers_add", summary: "Add a server, as lm servers add does (the person's token only)", status: 201, body: true},
	{method: "POST", path: "/api/servers/install", tool: "servers_install", summary: "Install a server from npm and add it, as lm servers install does (the person's token only)", status: 201, body: true},
	{method: "DELETE", path: "/api/servers/{name}", tool: "servers_rm", summary: "Remove a server from the configuration; the gateway stops it (the person's token only)", status: 200},
	{method: "GET", path: "/api/servers/{server}/tools", tool: "servers_tools", summary: "A configured server's tools with their schemas", status: 200},
	{method: "POST", path: "/api/ask", tool: "servers_ask", summary: "Ask the model for a tool call to propose (dry_run must be true; previous turns give context)", status: 200, body: true},
	{method: "POST", path: "/api/call", tool: "servers_call", summary: "Run a tool call the person approved, recorded as approved (the person's token only)", status: 200, body: true, person: true},
	{method: "GET", path: "/api/history", tool: "servers_history", summary: "The tool calls made, oldest first", status: 200},
}

func (s *Server) apiHandler(rt route) http.Handler {
	o := s.ops[rt.tool]
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		input, err := requestInput(r, rt, o)
		if err != nil {
			writeError(w, op.HTTPStatus(err, http.StatusBadRequest), err)
			return
		}
		env := s.opts.Env
		env.Client = "web"
		out, err := o.Call(r.Context(), &env, input)
		if err != nil {
			status := op.HTTPStatus(err, http.StatusUnprocessableEntity)
			switch {
			case r.Context().Err() != nil:
				// The caller stopped waiting (the page's Stop, say): not
				// a failure of the gateway's.
				s.opts.Log.Info("operation abandoned by its caller", "tool", rt.tool, "err", err)
			case status >= 500:
				s.opts.Log.Error("operation failed", "tool", rt.tool, "err", err)
			}
			writeError(w, status, err)
			return
		}
		if rt.status == http.StatusNoContent {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeJSON(w, rt.status, out)
	})
	if rt.person {
		return personOnly(false, rt.method+" "+rt.path, h)
	}
	return h
}

// requestInput builds the operation's JSON input from the request.
func requestInput(r *http.Request, rt route, o op.Operation) (json.RawMessage, error) {
	fields := map[string]any{}
	if rt.body {
		raw, err := io.ReadAll(r.Body)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, op.Errorf(op.KindInvalid, "request body is larger than %d bytes", tooBig.Limit).WithCategory("body_too_large")
		}
		if err != nil {
			return nil, op.Errorf(op.KindInvalid, "read request body: %w", err)
		}
		if len(bytes.TrimSpace(raw)) > 0 {
			if fields, err = decodeObject(raw); err != nil {
				return nil, op.Errorf(op.KindInvalid, "request body must be a JSON object: %v", err).WithCategory("bad_json")
			}
		}
	}
	schema := o.InputSchema()
	for name, values := range r.URL.Query() {
		fields[name] = queryValue(op.SchemaTypes(schemaProp(schema, name)), values[len(values)-1])
	}
	for _, name := range wildcards(rt.path) {
		fields[name] = r.PathValue(name)
	}
	raw, err := json.Marshal(fields)
	if err != nil {
		return nil, op.Errorf(op.KindInvalid, "encode input: %w", err)
	}
	return raw, nil
}

// decodeObject decodes a body that must be exactly one JSON object (not
// null, not followed by more data), keeping numbers as written.
func decodeObject(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if rest := bytes.TrimSpace(raw[dec.InputOffset():]); len(rest) > 0 {
		return nil, fmt.Errorf("unexpected data after the object at offset %d", dec.InputOffset())
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("got %s", jsonKind(v))
	}
	return obj, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}

// queryValue converts a query parameter to the JSON type its field takes;
// a value that does not convert stays a string and the operation's
// validation says what was expected. Infinities and NaN stay strings: JSON
// has no numbers for them.
func queryValue(types []string, v string) any {
	for _, t := range types {
		switch t {
		case "integer", "number":
			if n, err := strconv.ParseFloat(v, 64); err == nil && !math.IsInf(n, 0) && !math.IsNaN(n) {
				return json.Number(strconv.FormatFloat(n, 'f', -1, 64))
			}
		case "boolean":
			if b, err := strconv.ParseBool(v); err == nil {
				return b
			}
		}
	}
	return v
}

func wildcards(path string) []string {
	var names []string
	for _, seg := range strings.Split(path, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			names = append(names, strings.TrimSuffix(name, "}"))
		}
	}
	return names
}

// apiNotFound answers /api/ paths no route serves: 405 with Allow when the
// path exists under another method, else 404.
func apiNotFound(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, rt := range apiRoutes {
		if pathMatches(rt.path, r.URL.Path) && !slices.Contains(allow, rt.method) {
			allow = append(allow, rt.method)
		}
	}
	if pathMatches("/api/events", r.URL.Path) {
		allow = append(allow, "GET")
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, op.Errorf(op.KindInvalid, "%s is not allowed on %s", r.Method, r.URL.Path).
			WithCategory("method_not_allowed").WithHint("allowed: %s", strings.Join(allow, ", ")))
		return
	}
	writeError(w, http.StatusNotFound, op.Errorf(op.KindNotFound, "no API route %s", r.URL.Path).
		WithHint("the API is described at /openapi.json and /docs"))
}

// pathMatches matches a route pattern with {wildcards} against a path.
func pathMatches(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(strings.TrimSuffix(path, "/"), "/")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if !strings.HasPrefix(ps[i], "{") && ps[i] != xs[i] {
			return false
		}
	}
	return true
}

// The gateway answers in JSON as every HTTP face does.
var (
	writeJSON  = httpjson.Write
	writeError = httpjson.Error
)

// schemaProp is a property's schema, or an empty (any-type) schema.
func schemaProp(s *jsonschema.Schema, name string) *jsonschema.Schema {
	if p := s.Properties[name]; p != nil {
		return p
	}
	return &jsonschema.Schema{}
}
