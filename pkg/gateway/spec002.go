package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"lmtool.dev/lm/pkg/guard"
	"lmtool.dev/lm/pkg/jsonio"
	"lmtool.dev/lm/pkg/mcpx"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/sse"
)

// Spec 002's protocol for web clients: GET /info and GET /tools describe
// the gateway, GET /sse opens a stream that names the client
// ({"type":"connected","clientId":…}) and carries its results, and
// POST /messages runs {clientId, tool, parameters} in the background, its
// result arriving on that client's stream as a tool_result event. A client
// id lives exactly as long as its stream.

// resultBuffer is how many results a slow stream may fall behind before a
// call blocks on delivering its own.
const resultBuffer = 16

// spec002Routes adds the protocol's four routes to mux, behind the token;
// agents wraps them with who their callers are.
func (s *Server) spec002Routes(mux *http.ServeMux, agents func(http.Handler) http.Handler) {
	clients := &sseClients{byID: map[string]*sseClient{}}
	mux.Handle("GET /info", agents(http.HandlerFunc(s.spec002Info)))
	mux.Handle("GET /tools", agents(http.HandlerFunc(s.spec002Tools)))
	mux.Handle("GET /sse", agents(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.spec002Stream(w, r, clients) })))
	mux.Handle("POST /messages", agents(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.spec002Message(w, r, clients) })))
}

// sseClient is one open /sse stream.
type sseClient struct {
	ctx     context.Context // ends with the stream; calls made for it end too
	caller  op.Caller       // who opened it: only they may post for it
	results chan any
}

type sseClients struct {
	mu   sync.Mutex
	byID map[string]*sseClient
}

func (c *sseClients) add(ctx context.Context) (string, *sseClient) {
	var b [16]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	caller, _ := op.CallerFrom(ctx)
	cl := &sseClient{ctx: ctx, caller: caller, results: make(chan any, resultBuffer)}
	c.mu.Lock()
	c.byID[id] = cl
	c.mu.Unlock()
	return id, cl
}

func (c *sseClients) remove(id string) {
	c.mu.Lock()
	delete(c.byID, id)
	c.mu.Unlock()
}

func (c *sseClients) get(id string) *sseClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byID[id]
}

// served are the operations the request's caller may call over spec 002:
// those MCP serves, as MCP lists them to that caller.
func (s *Server) served(r *http.Request) []op.Operation {
	caller, _ := op.CallerFrom(r.Context())
	var ops []op.Operation
	for _, o := range s.opts.Ops {
		if m := o.Info(); !m.CLIOnly && !m.Stream && op.Permitted(m, caller, s.opts.Env.Grant) {
			ops = append(ops, o)
		}
	}
	return ops
}

func (s *Server) spec002Info(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"name": "lm", "version": s.opts.Version,
		"description": "lm's operations as tools: the instruction queue, developer helpers, jobs and MCP servers",
		"tools":       len(s.served(r)) + len(s.servers.Tools()),
		"endpoints":   map[string]string{"info": "/info", "tools": "/tools", "sse": "/sse", "messages": "/messages", "mcp": "/mcp"},
	})
}

func (s *Server) spec002Tools(w http.ResponseWriter, r *http.Request) {
	tools := []map[string]any{}
	for _, o := range s.served(r) {
		m := o.Info()
		tools = append(tools, map[string]any{
			"name": m.Name, "description": m.Summary, "parameters": op.WithoutFields(o.InputSchema(), m.CLIFields),
			"readOnly": m.Effect == op.ReadOnly, "destructive": m.Effect == op.Destructive,
		})
	}
	// The supervised servers' tools, namespaced as on /mcp.
	for _, t := range s.servers.Tools() {
		var schema any = t.InputSchema
		if t.RawInputSchema != nil {
			schema = t.RawInputSchema
		}
		a := t.Annotations
		tools = append(tools, map[string]any{
			"name": t.Name, "description": t.Description, "parameters": schema,
			"readOnly": a.ReadOnlyHint != nil && *a.ReadOnlyHint, "destructive": a.DestructiveHint != nil && *a.DestructiveHint,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": tools})
}

// spec002Stream is GET /sse. The connected event goes out both named and
// as a plain message, so clients listening either way get the id.
func (s *Server) spec002Stream(w http.ResponseWriter, r *http.Request, clients *sseClients) {
	id, cl := clients.add(r.Context())
	defer clients.remove(id)
	sse.Start(w)
	rc := http.NewResponseController(w)
	hello, _ := json.Marshal(map[string]string{"type": "connected", "clientId": id})
	sse.Retry(w, retryMillis)
	sse.Write(w, sse.Event{Name: "connected", Data: hello})
	sse.Write(w, sse.Event{Data: hello})
	if rc.Flush() != nil {
		return
	}
	keepAlive := time.NewTicker(s.opts.KeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case res := <-cl.results:
			data, err := jsonio.Marshal(res)
			if err != nil {
				s.opts.Log.Error("encode tool_result", "err", err)
				continue
			}
			sse.Write(w, sse.Event{Name: "tool_result", Data: data})
		case <-keepAlive.C:
			sse.KeepAlive(w)
		case <-r.Context().Done():
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
}

// message is the body of POST /messages.
type message struct {
	ClientID   string          `json:"clientId"`
	Tool       string          `json:"tool"`
	Parameters json.RawMessage `json:"parameters"`
	RequestID  string          `json:"requestId,omitempty"`
}

// spec002Message is POST /messages: checks the client and the tool (one of
// lm's or a supervised server's, namespaced as on /mcp), answers 202, and
// runs the call for as long as the client's stream lasts.
func (s *Server) spec002Message(w http.ResponseWriter, r *http.Request, clients *sseClients) {
	var msg message
	body, err := io.ReadAll(r.Body)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, op.Errorf(op.KindInvalid, "request body is larger than %d bytes", tooBig.Limit).WithCategory("body_too_large"))
		return
	case err != nil || json.Unmarshal(body, &msg) != nil:
		writeError(w, http.StatusBadRequest, op.Errorf(op.KindInvalid, "the body must be a JSON object {clientId, tool, parameters}").WithCategory("bad_json"))
		return
	case msg.ClientID == "":
		writeError(w, http.StatusBadRequest, op.Errorf(op.KindInvalid, "missing clientId").WithCategory("missing_client_id").
			WithHint("open GET /sse first and send the clientId of its connected event"))
		return
	}
	// A client id is bound to whoever opened its stream: another caller
	// who learnt it cannot post calls in its name.
	cl := clients.get(msg.ClientID)
	if caller, _ := op.CallerFrom(r.Context()); cl != nil && cl.caller != caller {
		cl = nil
	}
	if cl == nil {
		writeError(w, http.StatusNotFound, op.Errorf(op.KindNotFound, "unknown clientId %q: no open /sse stream has it", msg.ClientID).
			WithCategory("unknown_client_id").WithHint("client ids end with their stream; reconnect to GET /sse and use the new id"))
		return
	}
	// The call runs for as long as the stream lasts, on the stream's
	// context, but on behalf of whoever posted it.
	callCtx := cl.ctx
	if c, ok := op.CallerFrom(r.Context()); ok {
		callCtx = op.WithCaller(callCtx, c)
	}
	var run func(context.Context) (any, error)
	if o := s.ops[msg.Tool]; o != nil && !o.Info().CLIOnly && !o.Info().Stream {
		run = func(ctx context.Context) (any, error) {
			env := s.opts.Env
			// An agent that gave no name is known by its stream, so two
			// such clients keep apart.
			env.Client = mcpx.SessionAgent(msg.ClientID)
			return o.Call(ctx, &env, msg.Parameters)
		}
	} else if s.servers.HasTool(msg.Tool) {
		run = func(ctx context.Context) (any, error) { return s.servers.Call(ctx, msg.Tool, msg.Parameters) }
	}
	if run == nil {
		writeError(w, http.StatusNotFound, op.Errorf(op.KindNotFound, "no tool %q", msg.Tool).WithCategory("unknown_tool").
			WithHint("GET /tools lists the tools"))
		return
	}
	if msg.RequestID == "" {
		var b [8]byte
		rand.Read(b[:])
		msg.RequestID = hex.EncodeToString(b[:])
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"accepted": true, "requestId": msg.RequestID, "tool": msg.Tool})
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		var out any
		err := guard.Call(s.opts.Log, "tool call "+msg.Tool, func() (err error) {
			out, err = run(callCtx)
			return err
		})
		res := map[string]any{"type": "tool_result", "requestId": msg.RequestID, "tool": msg.Tool, "success": err == nil}
		if err != nil {
			res["error"] = op.EnvelopeOf(err)
		} else {
			res["result"] = out
		}
		select {
		case cl.results <- res:
		case <-cl.ctx.Done():
		}
	}()
}
