package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"lmtool.dev/lm/pkg/httpjson"
	"lmtool.dev/lm/pkg/jsonio"
	"lmtool.dev/lm/pkg/mcpx"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers"
	"lmtool.dev/lm/pkg/sse"
)

// Handler serves spec 004's routes: /health, /health/{server}, /servers
// (list, one, start, stop, restart, install, DELETE), /servers/reload,
// /servers/events (live state and activity for the dashboard), /cache and
// the per-server MCP endpoints /mcp/{server}. The gateway mounts it behind
// its token and Origin checks; the control socket serves it as is.
func (h *Hub) Handler(sessions mcpx.Sessions) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, h.Health())
	})
	mux.HandleFunc("GET /health/{server}", h.withChild(func(w http.ResponseWriter, r *http.Request, c *child) {
		s := c.status()
		code := http.StatusOK
		if !s.Healthy() {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, s)
	}))
	mux.HandleFunc("GET /servers", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, h.StatusOutput())
	})
	mux.HandleFunc("GET /servers/{server}", h.withChild(func(w http.ResponseWriter, r *http.Request, c *child) {
		writeJSON(w, http.StatusOK, c.status())
	}))
	mux.HandleFunc("POST /servers/{server}/start", h.withChild(func(w http.ResponseWriter, r *http.Request, c *child) {
		h.answerStarted(w, r, c)
	}))
	mux.HandleFunc("POST /servers/{server}/restart", h.withChild(func(w http.ResponseWriter, r *http.Request, c *child) {
		c.stop()
		h.answerStarted(w, r, c)
	}))
	mux.HandleFunc("POST /servers/{server}/stop", h.withChild(func(w http.ResponseWriter, r *http.Request, c *child) {
		c.stop()
		writeJSON(w, http.StatusOK, c.status())
	}))
	mux.HandleFunc("DELETE /servers/{server}", func(w http.ResponseWriter, r *http.Request) {
		if _, err := servers.Remove(r.Context(), &op.Env{Home: h.home}, servers.NameInput{Name: r.PathValue("server")}); err != nil {
			writeError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /servers/install", func(w http.ResponseWriter, r *http.Request) {
		// The same strict reading as every operation's input: a field the
		// installer does not know is refused, not silently dropped.
		var in servers.InstallInput
		data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err == nil {
			err = jsonio.DecodeStrict(data, &in)
		}
		if err == nil && in.Package == "" {
			err = errors.New("package is required")
		}
		if err != nil {
			writeError(w, op.Errorf(op.KindInvalid, "install body: %w", err).WithHint(`send {"package": "@org/mcp-server", "name": "optional"}`))
			return
		}
		caller, _ := op.CallerFrom(r.Context())
		out, err := servers.InstallOp(r.Context(), &op.Env{Home: h.home, Caller: caller}, in)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusCreated, out)
	})
	mux.HandleFunc("POST /servers/reload", func(w http.ResponseWriter, r *http.Request) {
		if err := h.Reload(); err != nil {
			writeError(w, op.Errorf(op.KindInvalid, "%w", err).WithCategory("invalid_config"))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /servers/events", h.events)
	mux.HandleFunc("GET /cache", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, h.CacheStats()) })
	mux.HandleFunc("DELETE /cache", func(w http.ResponseWriter, r *http.Request) {
		h.ClearCache()
		writeJSON(w, http.StatusOK, h.CacheStats())
	})
	mux.HandleFunc("/mcp/{server}", h.endpoint(sessions))
	mux.HandleFunc("POST /mcp/{server}/{method...}", h.pathCall)
	mux.HandleFunc("/mcp/{server}/{method...}", func(w http.ResponseWriter, r *http.Request) {
		writeRPCError(w, http.StatusMethodNotAllowed, -32600, fmt.Sprintf("%s /mcp/%s/%s: send POST with the call's params as the body, or use the MCP endpoint /mcp/%[2]s",
			r.Method, r.PathValue("server"), r.PathValue("method")))
	})
	return mux
}

func (h *Hub) withChild(fn func(http.ResponseWriter, *http.Request, *child)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("server")
		c := h.child(name)
		if c == nil {
			writeError(w, op.Errorf(op.KindNotFound, "no server named %q", name).WithHint("configured servers: GET /servers, or 'lm servers list'"))
			return
		}
		fn(w, r, c)
	}
}

// answerStarted starts a server and answers once it is running or failed.
func (h *Hub) answerStarted(w http.ResponseWriter, r *http.Request, c *child) {
	if !c.config().IsEnabled() {
		writeError(w, op.Errorf(op.KindConflict, "server %s is disabled", c.name).WithHint("enable it first: lm servers enable %s", c.name))
		return
	}
	c.start()
	ctx, cancel := context.WithTimeout(r.Context(), downloadInitTimeout)
	defer cancel()
	c.waitSettled(ctx)
	s := c.status()
	if s.State == servers.Failed {
		writeError(w, op.Errorf(op.KindUnavailable, "server %s failed to start: %s", c.name, s.LastError).WithCategory("server_failed").
			WithHint("see 'lm servers logs %s'", c.name))
		return
	}
	writeJSON(w, http.StatusOK, s)
}

// endpoint is POST /mcp/{server}: the server's own MCP endpoint. An
// auto-start server is started on first use.
func (h *Hub) endpoint(sessions mcpx.Sessions) http.HandlerFunc {
	handlers := map[*server.MCPServer]*passthrough{}
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("server")
		c := h.child(name)
		if c == nil {
			writeRPCError(w, http.StatusNotFound, -32601, fmt.Sprintf("unknown server %q; configured servers are listed at GET /servers", name))
			return
		}
		cfg := c.config()
		if !cfg.IsEnabled() {
			writeRPCError(w, http.StatusNotFound, -32601, fmt.Sprintf("server %q is disabled", name))
			return
		}
		if _, err := c.sessionFor(r.Context()); err != nil {
			writeRPCError(w, http.StatusServiceUnavailable, -32603, err.Error()+"; start it with 'lm servers start "+name+"'")
			return
		}
		h.mu.Lock()
		handler := handlers[c.own]
		if handler == nil {
			handler = &passthrough{hub: h, sessions: sessions, next: sessions.Server(c.own), own: c}
			handlers[c.own] = handler
		}
		h.mu.Unlock()
		handler.ServeHTTP(w, r)
	}
}

// Health is every configured server's state: ok when every enabled
// auto-start server is healthy, else degraded.
func (h *Hub) Health() servers.Health {
	out := servers.Health{Status: "ok", Servers: h.Statuses()}
	for _, s := range out.Servers {
		if s.Enabled && s.AutoStart && !s.Healthy() {
			out.Status = "degraded"
		}
	}
	return out
}

// pathCall is POST /mcp/{server}/{method...} (POST /mcp/NAME/tools/call):
// one JSON-RPC call without a session, for callers that speak HTTP but not
// MCP's handshake. The path names the method and the body holds its params,
// or a whole JSON-RPC request for that method; the answer is the JSON-RPC
// response, through the same breaker, cache and filters as the server's MCP
// endpoint.
func (h *Hub) pathCall(w http.ResponseWriter, r *http.Request) {
	name, method := r.PathValue("server"), r.PathValue("method")
	c := h.child(name)
	if c == nil {
		writeRPCError(w, http.StatusNotFound, -32601, fmt.Sprintf("unknown server %q; configured servers are listed at GET /servers", name))
		return
	}
	if !c.config().IsEnabled() {
		writeRPCError(w, http.StatusNotFound, -32601, fmt.Sprintf("server %q is disabled", name))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeRPCError(w, http.StatusBadRequest, -32700, "cannot read the request body: "+err.Error())
		return
	}
	var req struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      any             `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			writeRPCError(w, http.StatusBadRequest, -32700, "the body is not JSON: "+err.Error())
			return
		}
	}
	switch {
	case req.JSONRPC == "" && req.Method == "":
		// The body is the params themselves.
		req.Params = body
		if len(bytes.TrimSpace(body)) == 0 {
			req.Params = json.RawMessage(`{}`)
		}
		req.ID = 1
	case req.Method != method:
		writeRPCError(w, http.StatusBadRequest, -32600, fmt.Sprintf("the body's method %q is not the path's %q", req.Method, method))
		return
	}
	if req.ID == nil {
		req.ID = 1
	}
	if _, err := c.sessionFor(r.Context()); err != nil {
		writeRPCError(w, http.StatusServiceUnavailable, -32603, err.Error()+"; start it with 'lm servers start "+name+"'")
		return
	}
	raw, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "method": method, "params": req.Params})
	if err != nil {
		writeRPCError(w, http.StatusBadRequest, -32600, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, c.own.HandleMessage(r.Context(), raw))
}

// events streams the servers' state ("servers") and proxied calls
// ("activity") as server-sent events, for the dashboard.
func (h *Hub) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, op.Errorf(op.KindInternal, "streaming is not supported here"))
		return
	}
	sse.Start(w)
	changes, stop := h.Watch()
	defer stop()
	send := func(event string, v any) bool {
		data, _ := json.Marshal(v)
		err := sse.Write(w, sse.Event{Name: event, Data: data})
		flusher.Flush()
		return err == nil
	}
	items, wake := h.Activity()
	var seen uint64
	if len(items) > 0 {
		seen = items[len(items)-1].Seq
	}
	if !send("servers", h.StatusOutput()) || !send("activity", items) {
		return
	}
	keepAlive := time.NewTicker(15 * time.Second)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-changes:
			if !send("servers", h.StatusOutput()) {
				return
			}
		case <-wake:
			var all []servers.Activity
			all, wake = h.Activity()
			fresh := since(all, seen)
			if len(fresh) == 0 {
				continue
			}
			seen = fresh[len(fresh)-1].Seq
			// The cache's counters move with every call.
			if !send("activity", fresh) || !send("servers", h.StatusOutput()) {
				return
			}
		case <-keepAlive.C:
			if err := sse.KeepAlive(w); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

var writeJSON = httpjson.Write

// writeError answers with the error envelope and the status for its kind.
func writeError(w http.ResponseWriter, err error) {
	httpjson.Error(w, op.HTTPStatus(err, http.StatusBadRequest), err)
}

func writeRPCError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
}
