package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"lmtool.dev/lm/pkg/httpjson"
	"lmtool.dev/lm/pkg/mcpx"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers"
)

// The passthrough serves the call that dominates a hub's traffic, a
// tools/call of a stdio server's tool, as bytes: the arguments go to the
// child and its result back to the caller without being decoded into
// typed structures and encoded again, and without the streamable HTTP
// transport's per-request machinery (an ephemeral session, a goroutine
// forwarding notifications). It goes through the same forward as every
// other call, so the breaker, the timeout, cancellation and the activity
// log are the ones the typed path has; a client's notifications/cancelled
// ends a call of either way (without a session, only its own caller's), and
// /mcp's hooks see each call.
//
// It takes only what it can answer exactly as the transport would; every
// other request, and every call that needs the hub to look inside it, goes
// the typed way:
//   - a stateful endpoint (sessions live in the transport's table) or a
//     session id the stateless endpoint would refuse;
//   - a protocol version header the transport would refuse, or of the
//     2026-07-28 era, whose requests carry their own _meta;
//   - anything but one JSON-RPC request for tools/call whose params are a
//     name and arguments (no _meta: a progress token needs the relay, a
//     task the task machinery);
//   - a tool that is not a running stdio server's, or one the L1 cache
//     answers (the cache keeps typed results).
//
// On /mcp the result's resource URIs must be namespaced: a result that
// names a resource is decoded and rewritten, any other goes as it came.

// passthrough is one endpoint's: /mcp's or a server's own. It serves a
// request when it can, else hands it to next, the endpoint's transport.
type passthrough struct {
	hub      *Hub
	sessions mcpx.Sessions
	next     http.Handler
	// own is the server whose endpoint this is; nil on /mcp.
	own   *child
	fresh freshSessions
	// inFlight cancels the calls in progress, by caller, session and
	// request id, when their client sends notifications/cancelled.
	inFlight inFlight
	// typed counts the requests without a session that went the typed
	// way and are in progress, by caller and request id: see ServeHTTP.
	typed typedCalls
}

// Passthrough wraps /mcp's transport (next) so that calls of the servers'
// tools take the passthrough.
func (h *Hub) Passthrough(sessions mcpx.Sessions, next http.Handler) http.Handler {
	return &passthrough{hub: h, sessions: sessions, next: next}
}

func (p *passthrough) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	session := r.Header.Get(server.HeaderKeySessionID)
	if p.sessions.Stateful || r.Method != http.MethodPost || !legacyJSON(r.Header) || !validSession(session) {
		p.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	typed := func() {
		// The transport reads the body again when the request is its.
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		p.next.ServeHTTP(w, r)
	}
	if err != nil {
		typed()
		return
	}
	caller, _ := op.CallerFrom(r.Context())
	call, ok := parseToolCall(body)
	if !ok {
		// A cancellation may be for a call of either way: both hear it.
		// Without a session the transport knows a call by its id alone,
		// so a cancellation reaches it only from the caller who has a
		// call of that id in progress: another caller's small integer
		// ids would otherwise end this one's calls.
		if id, cancels := cancellation(body); cancels {
			p.cancel(caller, session, id)
			if session == "" && !p.typed.has(caller, id) {
				w.WriteHeader(http.StatusAccepted)
				return
			}
		} else if id, ok := requestID(body); ok && session == "" {
			defer p.typed.hold(caller, id)()
		}
		typed()
		return
	}
	c, upstream := p.own, call.name
	if c == nil {
		if c, upstream = p.hub.aggregatedTool(call.name); c == nil {
			typed()
			return
		}
	} else if c.own.GetTool(call.name) == nil {
		typed()
		return
	}
	cfg := c.config()
	if _, cached := cfg.CacheTools[upstream]; cached || cfg.Kind() != servers.Stdio || !p.fresh.seen(session, p.sessions.IdleTTL) {
		typed()
		return
	}
	p.answer(w, r, c, call, upstream, session, caller)
}

// callKey names a call as the transport's cancellation does, by its
// session and its id (idKey), and by its caller besides.
type callKey struct {
	role          op.Role
	name, session string
	id            string
}

func keyOf(caller op.Caller, session string, id []byte) callKey {
	return callKey{role: caller.Role, name: caller.Name, session: session, id: idKey(id)}
}

// cancellation is the request id a notifications/cancelled in body names,
// as written.
func cancellation(body []byte) ([]byte, bool) {
	if !bytes.Contains(body, []byte(mcp.MethodNotificationCancelled)) || !json.Valid(body) {
		return nil, false
	}
	f, ok := mcpx.ReadFrame(body)
	if !ok || f.Method != string(mcp.MethodNotificationCancelled) || f.Params == nil {
		return nil, false
	}
	var id []byte
	mcpx.Members(f.Params, func(key, value []byte) bool {
		if string(key) == "requestId" {
			id = value
		}
		return true
	})
	return id, id != nil && string(id) != "null"
}

// requestID is the id of the one JSON-RPC request in body, as written.
func requestID(body []byte) ([]byte, bool) {
	if !json.Valid(body) {
		return nil, false
	}
	f, ok := mcpx.ReadFrame(body)
	if !ok || f.ID == nil || string(f.ID) == "null" || f.Method == "" {
		return nil, false
	}
	return f.ID, true
}

// cancel ends the passthrough's call in progress that caller's
// cancellation of request id in session names, if there is one.
func (p *passthrough) cancel(caller op.Caller, session string, id []byte) {
	if cancel := p.inFlight.take(keyOf(caller, session, id), nil); cancel != nil {
		(*cancel)()
	}
}

// inFlight holds the passthrough's calls in progress, each by its key.
type inFlight struct {
	mu    sync.Mutex
	calls map[callKey]*context.CancelFunc
}

func (f *inFlight) put(key callKey, cancel *context.CancelFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[callKey]*context.CancelFunc{}
	}
	f.calls[key] = cancel
}

// take removes and returns the call of key: whichever it is when only is
// nil, else only that one (a client that reuses an id while its call runs
// must not take the other call's entry away).
func (f *inFlight) take(key callKey, only *context.CancelFunc) *context.CancelFunc {
	f.mu.Lock()
	defer f.mu.Unlock()
	cancel := f.calls[key]
	if cancel != nil && (only == nil || cancel == only) {
		delete(f.calls, key)
		return cancel
	}
	return nil
}

// typedCalls counts calls in progress by caller and request id.
type typedCalls struct {
	mu sync.Mutex
	n  map[callKey]int
}

// hold counts a call in; the function returned counts it out.
func (t *typedCalls) hold(caller op.Caller, id []byte) func() {
	key := keyOf(caller, "", id)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == nil {
		t.n = map[callKey]int{}
	}
	t.n[key]++
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.n[key]--; t.n[key] == 0 {
			delete(t.n, key)
		}
	}
}

func (t *typedCalls) has(caller op.Caller, id []byte) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n[keyOf(caller, "", id)] > 0
}

// answer forwards the call and writes the JSON-RPC response as the
// transport would: 200 with application/json, the caller's id as it sent
// it.
func (p *passthrough) answer(w http.ResponseWriter, r *http.Request, c *child, call toolCall, upstream, session string, caller op.Caller) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// By pointer: a client that reuses an id while its call runs must not
	// take the other call's entry away.
	key, entry := keyOf(caller, session, call.id), &cancel
	p.inFlight.put(key, entry)
	defer p.inFlight.take(key, entry)
	hooks := p.hooks()
	// The id as the transport decodes it, for the hooks.
	var id any
	var req *mcp.CallToolRequest
	if hooks != nil {
		json.Unmarshal(call.id, &id)
		req = &mcp.CallToolRequest{Request: mcp.Request{Method: string(mcp.MethodToolsCall)}, Header: r.Header}
		req.Params.Name = call.name
		for _, hook := range hooks.OnBeforeAny {
			hook(ctx, id, mcp.MethodToolsCall, req)
		}
		for _, hook := range hooks.OnBeforeCallTool {
			hook(ctx, id, req)
		}
	}
	result, err := p.hub.callRaw(ctx, c, upstream, call.arguments)
	if op.KindOf(err) == op.KindTimeout {
		// As the typed path answers: a result the model can read.
		result, err = json.Marshal(mcpx.ErrorResult(err))
	}
	if err == nil && p.own == nil && bytes.Contains(result, []byte(`"uri"`)) {
		result, err = namespacedRawResult(c.name, result)
	}
	if err != nil {
		if hooks != nil {
			for _, hook := range hooks.OnError {
				hook(ctx, id, mcp.MethodToolsCall, req, err)
			}
		}
		if r.Context().Err() == nil {
			writeJSON(w, http.StatusOK, struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   any             `json:"error"`
			}{mcp.JSONRPC_VERSION, call.id, rpcError(err)})
		}
		return
	}
	if r.Context().Err() == nil { // else the caller is gone, as the transport leaves it
		// The result is the child's, checked to be JSON as it was read: it
		// is written as it came, inside the response, and sent before the
		// hooks run (the call log formats and writes a line).
		out := make([]byte, 0, len(`{"jsonrpc":"2.0","id":,"result":}`)+len(call.id)+len(result)+1)
		out = append(append(out, `{"jsonrpc":"2.0","id":`...), call.id...)
		out = append(append(append(out, `,"result":`...), result...), '}')
		httpjson.Raw(w, http.StatusOK, out)
		http.NewResponseController(w).Flush()
	}
	if hooks != nil {
		// Hooks see whether the tool failed, not its content, which
		// crossed undecoded.
		_, failed := rawResult(result).toolError()
		typed := &mcp.CallToolResult{IsError: failed}
		for _, hook := range hooks.OnSuccess {
			hook(ctx, id, mcp.MethodToolsCall, req, typed)
		}
		for _, hook := range hooks.OnAfterCallTool {
			hook(ctx, id, req, typed)
		}
	}
}

// hooks are /mcp's server hooks (the gateway's call log); a server's own
// endpoint has none.
func (p *passthrough) hooks() *server.Hooks {
	if p.own != nil {
		return nil
	}
	return p.hub.aggregate.GetHooks()
}

// rpcError is the JSON-RPC error the transport sends for a tool handler's
// error: the code a URL elicitation asks for, else an internal error.
func rpcError(err error) mcp.JSONRPCErrorDetails {
	var required mcp.URLElicitationRequiredError
	if errors.As(err, &required) {
		d := required.JSONRPCError().Error
		return mcp.NewJSONRPCErrorDetails(d.Code, err.Error(), d.Data)
	}
	return mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR, err.Error(), nil)
}

// legacyJSON reports whether a request's headers are ones the transport
// accepts for a JSON body of a protocol version before 2026-07-28.
func legacyJSON(h http.Header) bool {
	if t := h.Get("Content-Type"); t != "application/json" {
		if media, _, err := mime.ParseMediaType(t); err != nil || media != "application/json" {
			return false
		}
	}
	v := h.Get(mcp.HeaderProtocolVersion)
	return v == "" || (mcp.IsValidProtocolVersion(v) && !mcp.IsModernProtocol(v))
}

// toolCall is a tools/call as it arrived: its id and arguments are passed
// on verbatim.
type toolCall struct {
	id        []byte
	name      string
	arguments []byte
}

// parseToolCall reads one JSON-RPC tools/call request whose params hold
// nothing but a name and arguments, each written as the transport would
// read it (a member it would match only case-insensitively, or a name with
// escapes, leaves the request to the transport).
func parseToolCall(body []byte) (toolCall, bool) {
	if !json.Valid(body) {
		return toolCall{}, false
	}
	f, ok := mcpx.ReadFrame(body)
	if !ok || f.JSONRPC != mcp.JSONRPC_VERSION || f.Method != string(mcp.MethodToolsCall) || !plainID(f.ID) || f.Params == nil {
		return toolCall{}, false
	}
	call, plain := toolCall{id: f.ID}, true
	ok = mcpx.Members(f.Params, func(key, value []byte) bool {
		switch string(key) {
		case "name":
			if plain = len(value) > 2 && value[0] == '"' && bytes.IndexByte(value, '\\') < 0; plain {
				call.name = string(value[1 : len(value)-1])
			}
		case "arguments":
			if string(value) != "null" {
				call.arguments = value
			}
		default:
			plain = false
		}
		return plain
	})
	return call, ok && plain && call.name != ""
}

// plainID is a request id that is a string or a number.
func plainID(id []byte) bool {
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"':
		return true // the body is valid JSON: a string
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := strconv.ParseFloat(string(id), 64)
		return err == nil
	}
	return false
}

// aggregatedTool is the server and upstream name of a tool on /mcp, or nil
// when the name is not a running server's tool there.
func (h *Hub) aggregatedTool(name string) (*child, string) {
	h.mu.Lock()
	children := make([]*child, 0, len(h.children))
	for _, c := range h.children {
		children = append(children, c)
	}
	h.mu.Unlock()
	for _, c := range children {
		c.mu.Lock()
		upstream, ok := c.mirrored.upstream[name]
		c.mu.Unlock()
		if ok {
			return c, upstream
		}
	}
	return nil, ""
}

// callRaw forwards a tools/call to c's session as bytes and returns the
// result as the child sent it.
func (h *Hub) callRaw(ctx context.Context, c *child, upstream string, arguments []byte) (json.RawMessage, error) {
	v, err := h.forward(ctx, c, "tools/call", upstream, nil, func(ctx context.Context, cl *client.Client) (any, error) {
		conn, ok := cl.GetTransport().(*stdioConn)
		if !ok {
			return nil, fmt.Errorf("server %s is not a stdio server", c.name)
		}
		return h.sendRaw(ctx, conn, upstream, arguments)
	})
	if err != nil {
		return nil, err
	}
	return json.RawMessage(v.(rawResult)), nil
}

// sendRaw sends one tools/call on conn as the session's client would, with
// an id of the hub's own, and tells the child when the caller gave up.
func (h *Hub) sendRaw(ctx context.Context, conn *stdioConn, tool string, arguments []byte) (rawResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, transport.NewError(err)
	}
	name, err := json.Marshal(tool)
	if err != nil {
		return nil, err
	}
	if bytes.ContainsAny(arguments, "\r\n") {
		// A message is one line: the caller's arguments may be laid out
		// on several (valid JSON has line breaks only between tokens).
		var compact bytes.Buffer
		if err := json.Compact(&compact, arguments); err != nil {
			return nil, err
		}
		arguments = compact.Bytes()
	}
	id := strconv.AppendUint([]byte(`"lm-`), h.rawSeq.Add(1), 10)
	id = append(id, '"')
	line := make([]byte, 0, 96+len(id)+len(name)+len(arguments))
	line = append(append(line, `{"jsonrpc":"2.0","id":`...), id...)
	line = append(append(line, `,"method":"tools/call","params":{"name":`...), name...)
	if arguments != nil {
		line = append(append(line, `,"arguments":`...), arguments...)
	}
	line = append(line, "}}\n"...)
	answer, err := conn.call(ctx, id, line)
	if err != nil {
		if ctx.Err() != nil {
			cancelled(ctx, conn, id)
		}
		return nil, transport.NewError(err)
	}
	f, _ := mcpx.ReadFrame(answer) // routed by it: an object
	// Some libraries write "error":null beside a result: no error.
	if f.Error != nil && string(f.Error) != "null" {
		var e mcp.JSONRPCErrorDetails
		if err := json.Unmarshal(f.Error, &e); err != nil {
			return nil, fmt.Errorf("the server's error %s: %w", f.Error, err)
		}
		return nil, e.AsError()
	}
	if f.Result == nil {
		return rawResult("null"), nil
	}
	if !utf8.Valid(f.Result) {
		// JSON is UTF-8, and the line was checked to be JSON but not that:
		// bytes that are no UTF-8 can only be inside strings, where U+FFFD
		// takes their place, as it does in what the typed path sends.
		return rawResult(bytes.ToValidUTF8(f.Result, []byte("\uFFFD"))), nil
	}
	return rawResult(f.Result), nil
}

// cancelNoticeTimeout bounds the notifications/cancelled sent for a call
// its caller gave up on.
const cancelNoticeTimeout = 5 * time.Second

// cancelled tells the child to stop working on request id (JSON text), off
// the caller's path: the notice is best effort, and a child that does not
// read must not hold anyone up.
func cancelled(ctx context.Context, conn *stdioConn, id []byte) {
	reason := ctx.Err().Error()
	go func() {
		nctx, cancel := context.WithTimeout(context.Background(), cancelNoticeTimeout)
		defer cancel()
		conn.SendNotification(nctx, mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": json.RawMessage(id), "reason": reason}},
		}})
	}()
}

// rawResult is a tools/call result as the child sent it.
type rawResult json.RawMessage

// toolError says whether the result reports a failed tool, and what it
// said; a result without "isError" is not decoded.
func (r rawResult) toolError() (string, bool) {
	if !bytes.Contains(r, []byte(`"isError"`)) {
		return "", false
	}
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(r, &res) != nil || !res.IsError {
		return "", false
	}
	for _, c := range res.Content {
		if c.Type == "text" {
			return c.Text, true
		}
	}
	return "the tool reported an error", true
}

// namespacedRawResult rewrites the resource URIs of a result for /mcp.
func namespacedRawResult(server string, raw json.RawMessage) (json.RawMessage, error) {
	res, err := mcp.ParseCallToolResult(&raw)
	if err != nil {
		return nil, fmt.Errorf("server %s: %w", server, err)
	}
	return json.Marshal(namespacedToolResult(server, res))
}

// validSession reports whether the stateless endpoint accepts session id:
// none, or one of the form it hands out.
func validSession(id string) bool {
	if id == "" {
		return true
	}
	_, err := (&server.StatelessGeneratingSessionIdManager{}).Validate(id)
	return err == nil
}

// errReader returns err (io.EOF when nil) once what came before it is read.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

// freshSessions counts a session as seen by the transport once per period:
// the transport sweeps sessions it has not seen for its idle TTL, so a
// session whose calls all took the passthrough would be swept while in
// use. The first call of each session in a period (a quarter of the TTL)
// goes the typed way, which marks the session active.
type freshSessions struct {
	mu     sync.Mutex
	since  time.Time
	recent map[string]bool
}

// seen reports whether session id went through the transport in the
// current period, and records it as doing so now if not.
func (f *freshSessions) seen(id string, ttl time.Duration) bool {
	if id == "" {
		return true // a call without a session leaves nothing to sweep
	}
	if ttl <= 0 {
		ttl = mcpx.DefaultSessionIdleTTL
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := time.Now(); f.recent == nil || now.Sub(f.since) >= ttl/4 {
		f.since, f.recent = now, map[string]bool{}
	}
	if f.recent[id] {
		return true
	}
	f.recent[id] = true
	return false
}
