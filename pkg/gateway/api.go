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

// apiRoute is one of an operation's routes (its [op.Meta.HTTP]) as the
// gateway serves it: the routes are part of the operations' definitions,
// so the API, its OpenAPI document and /docs follow the registry.
type apiRoute struct {
	op.Route
	op op.Operation
}

// apiRoutes lists the routes of ops, in the order of ops and of each one's
// declaration.
func apiRoutes(ops []op.Operation) []apiRoute {
	var routes []apiRoute
	for _, o := range ops {
		for _, r := range o.Info().HTTP {
			routes = append(routes, apiRoute{Route: r, op: o})
		}
	}
	return routes
}

// tool is the route's operation's MCP tool name.
func (rt apiRoute) tool() string { return rt.op.Info().Name }

// summary is what the API's documents say of the route.
func (rt apiRoute) summary() string {
	if rt.Summary != "" {
		return rt.Summary
	}
	return rt.op.Info().Summary
}

// notInBody are the operation's fields a route's body does not take: those
// its path gives and those of the command line only.
func (rt apiRoute) notInBody() []string {
	return append(rt.Wildcards(), rt.op.Info().CLIFields...)
}

func (s *Server) apiHandler(rt apiRoute) http.Handler {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		input, err := requestInput(r, rt)
		if err != nil {
			writeError(w, op.HTTPStatus(err, http.StatusBadRequest), err)
			return
		}
		env := s.opts.Env
		env.Client = "web"
		out, err := rt.op.Call(r.Context(), &env, input)
		if err != nil {
			status := op.HTTPStatus(err, http.StatusUnprocessableEntity)
			switch {
			case r.Context().Err() != nil:
				// The caller stopped waiting (the page's Stop, say): not
				// a failure of the gateway's.
				s.opts.Log.Info("operation abandoned by its caller", "tool", rt.tool(), "err", err)
			case status >= 500:
				s.opts.Log.Error("operation failed", "tool", rt.tool(), "err", err)
			}
			writeError(w, status, err)
			return
		}
		if rt.SuccessStatus() == http.StatusNoContent {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeJSON(w, rt.SuccessStatus(), out)
	})
	if rt.PersonOnly {
		return personOnly(false, rt.Pattern(), h)
	}
	return h
}

// requestInput builds the operation's JSON input from the request.
func requestInput(r *http.Request, rt apiRoute) (json.RawMessage, error) {
	fields := map[string]any{}
	if rt.Body {
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
	schema := rt.op.InputSchema()
	for name, values := range r.URL.Query() {
		fields[name] = queryValue(op.SchemaTypes(schemaProp(schema, name)), values[len(values)-1])
	}
	for _, name := range rt.Wildcards() {
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

// apiNotFound answers /api/ paths no route serves: 405 with Allow when the
// path exists under another method, else 404.
func (s *Server) apiNotFound(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, rt := range s.api {
		if pathMatches(rt.Path, r.URL.Path) && !slices.Contains(allow, rt.Method) {
			allow = append(allow, rt.Method)
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
