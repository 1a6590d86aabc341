package mcpx_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"lmtool.dev/lm/pkg/mcpx"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/registry"
	"lmtool.dev/lm/pkg/store"
)

// callers are every kind of caller a face can establish.
var callers = []op.Caller{
	{Role: op.RolePerson},
	{Role: op.RoleAgent, Name: "probe"},
	{},
}

// admitted is the declaration read plainly, independently of op's own
// reading of it: the person may call everything; an agent what is declared
// for agents or anyone; an anonymous caller what is declared for anyone.
func admitted(m op.Meta, c op.Caller) bool {
	switch c.Role {
	case op.RolePerson:
		return true
	case op.RoleAgent:
		return m.Callers == op.Agents || m.Callers == op.Anyone
	default:
		return m.Callers == op.Anyone
	}
}

// face calls a tool as a caller and reports the error envelope, or nil when
// the call succeeded.
type face struct {
	name string
	// served reports whether the face offers operations of this kind at
	// all (MCP serves neither CLI-only operations nor streams).
	served func(op.Meta) bool
	// list returns the tool names the caller is offered, or nil where the
	// face has no listing.
	list func(t *testing.T, c op.Caller) []string
	call func(t *testing.T, c op.Caller, tool string, args json.RawMessage) *op.Envelope
}

func onMCP(m op.Meta) bool { return !m.CLIOnly && !m.Stream }

// TestEveryOperationEveryCallerEveryFace: each operation is allowed or
// denied to each caller on each face exactly as it declares, and each
// person-only field is refused to everyone but the person. The probes never
// run a handler: an admitted call carries an unknown field and fails
// validation; a refused one must fail before it.
func TestEveryOperationEveryCallerEveryFace(t *testing.T) {
	ops := registry.All()
	dir := t.TempDir()
	base := op.Env{Store: store.New(filepath.Join(dir, "lm.db"), 5*time.Second), Home: dir, Stderr: io.Discard, Now: time.Now}
	byName := map[string]op.Operation{}
	for _, o := range ops {
		byName[o.Info().Name] = o
	}

	faces := []face{
		{
			name:   "in-process call (the CLI's path)",
			served: func(op.Meta) bool { return true },
			list:   func(*testing.T, op.Caller) []string { return nil },
			call: func(t *testing.T, c op.Caller, tool string, args json.RawMessage) *op.Envelope {
				env := base
				env.Caller = c
				if _, err := byName[tool].Call(context.Background(), &env, args); err != nil {
					e := op.EnvelopeOf(err)
					return &e
				}
				return nil
			},
		},
		mcpFace(t, "lm mcp (the face's caller, in-process client)", ops, base, func(t *testing.T, s *server.MCPServer, c op.Caller) *client.Client {
			cl, err := client.NewInProcessClient(s)
			if err != nil {
				t.Fatal(err)
			}
			return cl
		}, true),
		mcpFace(t, "streamable HTTP /mcp on loopback (the request's caller)", ops, base, func(t *testing.T, s *server.MCPServer, c op.Caller) *client.Client {
			// As the gateway's authentication does: the request's caller
			// is recorded on its context, over a base Env that trusts no one.
			h := server.NewStreamableHTTPServer(s, server.WithStateLess(true))
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.ServeHTTP(w, r.WithContext(op.WithCaller(r.Context(), c)))
			}))
			t.Cleanup(srv.Close)
			cl, err := client.NewStreamableHttpClient(srv.URL, transport.WithHTTPTimeout(30*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			return cl
		}, false),
	}

	for _, f := range faces {
		for _, c := range callers {
			var want []string
			for _, o := range ops {
				m := o.Info()
				if !f.served(m) {
					continue
				}
				if admitted(m, c) {
					want = append(want, m.Name)
				}
				got := f.call(t, c, m.Name, json.RawMessage(`{"__probe":1}`))
				switch {
				case got == nil:
					t.Errorf("%s, %s, %s: a probe with an unknown field succeeded", f.name, c, m.Name)
				case admitted(m, c) && (got.ErrorCategory != "invalid_input" || !strings.Contains(got.Error, "__probe")):
					t.Errorf("%s, %s, %s: declared %s, so the call must reach validation; got %+v", f.name, c, m.Name, m.Callers, *got)
				case !admitted(m, c) && (got.ErrorCategory != "denied" || got.ExitCode != 5 || !strings.Contains(got.Error, c.String())):
					t.Errorf("%s, %s, %s: declared %s, so the call must be denied naming the caller; got %+v", f.name, c, m.Name, m.Callers, *got)
				}
				if !admitted(m, c) || c.Role == op.RolePerson {
					continue
				}
				for _, field := range m.PersonFields {
					input := probeInput(t, o.InputSchema(), field)
					if got := f.call(t, c, m.Name, input); got == nil || got.ErrorCategory != "denied" || !strings.Contains(got.Error, `"`+field+`"`) {
						t.Errorf("%s, %s, %s: person-only field %s must be denied; %s got %+v", f.name, c, m.Name, field, input, got)
					}
				}
			}
			if listed := f.list(t, c); listed != nil {
				sort.Strings(want)
				if !slices.Equal(listed, want) {
					t.Errorf("%s, %s: tools/list\n got  %v\n want %v", f.name, c, listed, want)
				}
			}
		}
	}
}

// mcpFace serves the registry as lm's MCP faces do. With callerInBase the
// caller is the face's own (lm mcp: every call is an agent's); without, the
// base trusts no one and each request carries its caller (the gateway).
func mcpFace(t *testing.T, name string, ops []op.Operation, base op.Env,
	connect func(*testing.T, *server.MCPServer, op.Caller) *client.Client, callerInBase bool) face {
	clients := map[op.Caller]*client.Client{}
	session := func(t *testing.T, c op.Caller) *client.Client {
		if cl := clients[c]; cl != nil {
			return cl
		}
		env := base
		if callerInBase {
			env.Caller = c
		}
		s, err := mcpx.NewServer(ops, registry.Resources(), env, "test", nil)
		if err != nil {
			t.Fatal(err)
		}
		cl := connect(t, s, c)
		ctx := context.Background()
		if err := cl.Start(ctx); err != nil {
			t.Fatal(err)
		}
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
		init.Params.ClientInfo = mcp.Implementation{Name: "callers-test", Version: "1"}
		if _, err := cl.Initialize(ctx, init); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		clients[c] = cl
		return cl
	}
	return face{
		name:   name,
		served: onMCP,
		list: func(t *testing.T, c op.Caller) []string {
			res, err := session(t, c).ListTools(context.Background(), mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			names := []string{}
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			sort.Strings(names)
			return names
		},
		call: func(t *testing.T, c op.Caller, tool string, args json.RawMessage) *op.Envelope {
			req := mcp.CallToolRequest{}
			req.Params.Name = tool
			req.Params.Arguments = args
			res, err := session(t, c).CallTool(context.Background(), req)
			if err != nil {
				t.Fatalf("%s: tools/call %s as %s: %v (a refusal is an isError result, not a protocol error)", name, tool, c, err)
			}
			if !res.IsError {
				return nil
			}
			var e op.Envelope
			if err := json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &e); err != nil {
				t.Fatalf("%s: %s's error is not lm's envelope: %v", name, tool, err)
			}
			return &e
		},
	}
}

// probeInput is an input that passes the shape checks (every required field
// present with a value of its type) and sets field to a value that is not
// its zero, so only the person-only check stands between it and the
// handler.
func probeInput(t *testing.T, s *jsonschema.Schema, field string) json.RawMessage {
	in := map[string]any{}
	for _, name := range s.Required {
		in[name] = sample(s.Properties[name])
	}
	in[field] = sample(s.Properties[field])
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// sample is a value a schema accepts at the top level that is not a zero.
func sample(s *jsonschema.Schema) any {
	if len(s.Enum) > 0 {
		return s.Enum[len(s.Enum)-1]
	}
	types := op.SchemaTypes(s)
	if len(types) == 0 {
		return "x"
	}
	switch types[0] {
	case "boolean":
		return true
	case "integer", "number":
		if s.Minimum != nil && *s.Minimum > 1 {
			return *s.Minimum
		}
		return 1
	case "array":
		if s.Items != nil && slices.Contains(op.SchemaTypes(s.Items), "string") {
			return []string{"probe"}
		}
		return []any{map[string]any{}}
	case "object":
		return map[string]any{"probe": "x"}
	default:
		return "probe"
	}
}
