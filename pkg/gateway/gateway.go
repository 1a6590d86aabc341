// Package gateway is lm's long-running HTTP process: the queue's HTTP API and
// live event stream, the web page, an OpenAPI description, and MCP over HTTP
// (streamable HTTP at /mcp, the legacy HTTP+SSE transport at /mcp/sse). Every
// API route and every MCP tool calls the same registered operations as the
// CLI, so there is one behaviour however lm is reached.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"lmtool.dev/lm/pkg/gateway/token"
	"lmtool.dev/lm/pkg/gatewayd"
	"lmtool.dev/lm/pkg/mcpx"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers"
	"lmtool.dev/lm/pkg/servers/enhance"
	mcphub "lmtool.dev/lm/pkg/servers/hub"
)

// DefaultAddr is where the gateway listens unless told otherwise: loopback
// only, on a port no common development server uses.
const DefaultAddr = gatewayd.DefaultAddr

// Limits on what one request may cost.
const (
	maxBodyBytes  = 2 << 20 // an instruction is at most 1 MiB; JSON escaping can double it
	idleTimeout   = 2 * time.Minute
	shutdownGrace = 5 * time.Second
	// DefaultKeepAlive is how often an idle event stream gets a comment
	// line, so proxies and browsers do not time it out.
	DefaultKeepAlive = 15 * time.Second
)

// How long a client may take to send a request's headers, and the whole
// request: a slow or stalled client must not hold a connection forever.
// Variables only so that tests can shorten them.
var (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
)

// Options configure a gateway.
type Options struct {
	// Env is copied for every operation call; Started is shown as the
	// server's start time.
	Env op.Env
	// Ops are the operations served, normally registry.All().
	Ops []op.Operation
	// Resources are the MCP resources /mcp serves, normally registry.Resources().
	Resources []op.Resource
	// Version is reported to MCP clients and in the OpenAPI document.
	Version string
	// Token is the person's bearer token. When empty, it is the token in
	// LM_HOME, created on the first start, unless NoToken. Agents get their
	// own tokens (see package token); every route but the page's files,
	// /healthz and the API's description needs one of them.
	Token string
	// NoToken serves without tokens, as the person chose: the page's
	// routes credit their callers as the person, MCP's as anonymous agents.
	// Serve refuses it on an address beyond loopback.
	NoToken bool
	// Sessions is how /mcp and /mcp/{server} keep MCP sessions: stateless
	// by default; stateful ones expire when idle and are bounded in number.
	Sessions mcpx.Sessions
	// KeepAlive is the event-stream keep-alive interval (DefaultKeepAlive
	// when zero).
	KeepAlive time.Duration
	// Log receives one line per request and the lifecycle messages.
	Log *slog.Logger
	// AllowOrigins are the origins of pages elsewhere (scheme://host[:port])
	// that may call the gateway from a browser, with CORS; none by default.
	AllowOrigins []string
}

// Server is a configured gateway.
type Server struct {
	opts     Options
	verifier *token.Verifier
	ops      map[string]op.Operation
	api      []apiRoute // the operations' routes under /api
	fanout   *fanout
	servers  *mcphub.Hub // the supervised MCP servers (spec 004)
	enhance  *enhance.Enhancer
	mcp      *server.StreamableHTTPServer // /mcp, whose idle sessions a sweeper forgets
	handler  http.Handler
	origins  map[string]bool // the other origins whose pages may call, as browsers send them
	tickets  *tickets        // single-use passes to an event stream, for clients that cannot send a token
	// calls are spec 002 calls running for their streams. They write to
	// the store (the call history) even once cancelled, so Serve waits for
	// them before it returns.
	calls sync.WaitGroup
}

// New builds a gateway from opts.
func New(opts Options) (*Server, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = DefaultKeepAlive
	}
	if opts.Env.Started.IsZero() {
		opts.Env.Started = time.Now()
	}
	opts.Env.Stderr = logLines{opts.Log}
	switch {
	case opts.NoToken && opts.Token != "":
		return nil, op.Errorf(op.KindInvalid, "gateway: a token and no token at once").WithHint("pass a token or --no-token, not both")
	case !opts.NoToken && opts.Token == "":
		tok, err := token.Person(opts.Env.Home)
		if err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
		opts.Token = tok
	}
	s := &Server{opts: opts, verifier: token.NewVerifier(opts.Env.Home, opts.Token), ops: map[string]op.Operation{},
		origins: map[string]bool{}, tickets: newTickets()}
	for _, o := range opts.AllowOrigins {
		origin, err := ParseOrigin(o)
		if err != nil {
			return nil, err
		}
		s.origins[origin] = true
	}
	for _, o := range opts.Ops {
		s.ops[o.Info().Name] = o
	}
	s.api = apiRoutes(opts.Ops)
	s.fanout = newFanout(&s.opts.Env, opts.Log)
	// /mcp aggregates the supervised servers' tools, prompts and resources
	// beside lm's own, and tells clients when they come and go.
	mcpServer, err := mcpx.NewServer(opts.Ops, opts.Resources, opts.Env, opts.Version, nil,
		server.WithToolCapabilities(true), server.WithPromptCapabilities(true), server.WithResourceCapabilities(false, true),
		server.WithHooks(mcpx.CallLog(opts.Log)))
	if err != nil {
		return nil, fmt.Errorf("gateway: build MCP server: %w", err)
	}
	if s.servers, err = mcphub.New(mcphub.Options{Home: opts.Env.Home, Environ: opts.Env.Environ, Aggregate: mcpServer, Log: opts.Log}); err != nil {
		return nil, op.Errorf(op.KindInvalid, "gateway: %w", err).WithCategory("invalid_config").
			WithHint("fix %s, or check it with 'lm servers list'", servers.Path(opts.Env.Home))
	}
	settings := s.servers.Settings()
	if s.enhance, err = enhance.New(opts.Env.Home, s.opts.Env.LookupEnv, settings.CacheSize(), settings.TTL(), opts.Log); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	s.handler = s.routes(mcpServer)
	return s, nil
}

// PageURL is the page's address on this gateway listening at addr.
func (s *Server) PageURL(addr string) string { return PageURL(addr, s.opts.Token) }

// PageURL is the page's address on a gateway listening at addr, carrying
// the person's token (if any): see [gatewayd.PageURL].
func PageURL(addr, token string) string { return gatewayd.PageURL(addr, token) }

func (s *Server) routes(m *server.MCPServer) http.Handler {
	page := func(h http.Handler) http.Handler { return s.identified(pageFace, h) }
	agents := func(h http.Handler) http.Handler { return s.identified(agentFace, h) }
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	for _, r := range s.api {
		mux.Handle(r.Pattern(), page(s.apiHandler(r)))
	}
	mux.Handle("GET /api/events", page(http.HandlerFunc(s.events)))
	mux.Handle("POST /api/tickets", page(http.HandlerFunc(s.issueTicket)))
	s.askThreadRoutes(mux, page)
	mux.Handle("/api/", page(http.HandlerFunc(s.apiNotFound)))
	mux.HandleFunc("GET /openapi.json", s.openAPI)
	mux.HandleFunc("GET /docs", s.docs)

	s.mcp = s.opts.Sessions.Server(m, server.WithHeartbeatInterval(s.opts.KeepAlive))
	legacy := server.NewSSEServer(m, server.WithStaticBasePath("/mcp"), server.WithKeepAlive(true),
		server.WithKeepAliveInterval(s.opts.KeepAlive))
	// Calls of the servers' tools cross as bytes; everything else reaches
	// the transport, whose unknown resources answer resource-not-found.
	mux.Handle("/mcp", agents(s.servers.Passthrough(s.opts.Sessions, mcpx.ResourceErrors(s.mcp))))
	mux.Handle("GET /mcp/sse", agents(legacy.SSEHandler()))
	mux.Handle("POST /mcp/message", agents(legacy.MessageHandler()))
	hub := s.servers.Handler(s.opts.Sessions)
	// Installing, removing, starting and stopping servers decide which
	// programs run: the person's, like the configuration itself.
	dashboard := page(personOnly(true, "changing the servers", hub))
	for _, p := range []string{"/health", "/health/", "/servers", "/servers/", "/cache"} {
		mux.Handle(p, dashboard)
	}
	mux.Handle("GET /health", page(http.HandlerFunc(s.health)))
	mux.Handle("/mcp/{server}", agents(hub))
	mux.Handle("/mcp/{server}/{method...}", agents(hub))
	s.spec002Routes(mux, agents)
	mux.Handle("POST /ollama/enhance", page(s.enhance.Handler()))

	mux.Handle("/", webHandler())
	return s.logged(s.recovered(s.sameOrigin(jsonBodies(limitBody(mux)))))
}

// Serve answers requests on ln until ctx ends, then shuts down gracefully:
// no new connections; event streams and the MCP calls waiting on them end
// at once (a cancelled get_user_request consumes nothing); other requests
// in flight get a grace period to finish, then are cancelled too. Each
// ready function runs once HTTP and the control socket serve (to announce
// the address, say); an error from one stops the gateway.
func (s *Server) Serve(ctx context.Context, ln net.Listener, ready ...func() error) error {
	if s.opts.NoToken && !IsLoopback(ln.Addr().String()) {
		return op.Errorf(op.KindInvalid, "gateway: no token on %s, an address beyond loopback: anyone who reaches it could use the queue and the tools", ln.Addr()).
			WithHint("listen on 127.0.0.1 (--addr 127.0.0.1:PORT), or keep the token")
	}
	baseCtx, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	streamsCtx, endStreams := context.WithCancel(baseCtx)
	defer endStreams()
	// Handlers touch the store: none may run once Serve has returned.
	var inFlight sync.WaitGroup
	defer inFlight.Wait()
	srv := &http.Server{
		Handler:           untilShutdown(streamsCtx, &inFlight, s.handler),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		IdleTimeout:       idleTimeout,
		// No WriteTimeout: event streams and waiting get_user_request
		// calls legitimately last minutes.
		BaseContext: func(net.Listener) context.Context { return baseCtx },
		ErrorLog:    slog.NewLogLogger(s.opts.Log.Handler(), slog.LevelWarn),
	}
	// The event reader reads the store: it must be done before Serve
	// returns, or it could recreate a store its caller is removing.
	var background sync.WaitGroup
	background.Add(1)
	go func() { defer background.Done(); s.fanout.run(baseCtx) }()
	defer func() { cancelAll(); background.Wait(); s.calls.Wait() }()
	control, err := s.listenControl()
	if err != nil {
		return err
	}
	controlSrv := &http.Server{Handler: s.servers.Handler(s.opts.Sessions), ReadHeaderTimeout: readHeaderTimeout,
		BaseContext: func(net.Listener) context.Context { return baseCtx }, ErrorLog: srv.ErrorLog}
	go controlSrv.Serve(control)
	// Children never outlive the gateway: they stop after the listeners.
	defer s.servers.Close()
	defer s.mcp.Shutdown(context.Background())
	defer controlSrv.Close()
	s.servers.Start()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	// Logged before the ready functions announce the gateway, so whoever
	// they tell finds the line in the log.
	s.opts.Log.Info("gateway listening", "addr", ln.Addr().String(), "store", s.opts.Env.Store.Path,
		"token", !s.opts.NoToken, "mcp_stateful", s.opts.Sessions.Stateful)
	for _, r := range ready {
		if err := r(); err != nil {
			srv.Close()
			return fmt.Errorf("gateway: %w", err)
		}
	}
	select {
	case err := <-errc:
		return fmt.Errorf("gateway: serve: %w", err)
	case <-ctx.Done():
	}
	s.opts.Log.Info("gateway shutting down")
	endStreams()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); errors.Is(err, context.DeadlineExceeded) {
		// The grace is over: cancel what still runs (Serve's deferred
		// calls wait for it) and drop the connections.
		s.opts.Log.Warn("requests still running after the shutdown grace period are cancelled", "grace", shutdownGrace)
		cancelAll()
		srv.Close()
	} else if err != nil {
		return fmt.Errorf("gateway: shutdown: %w", err)
	}
	s.opts.Log.Info("gateway stopped")
	return nil
}

// untilShutdown counts requests in flight and ends those that accept an
// event stream when shutdown (the end of streams) begins: the page's live
// events and MCP's streams, including tool calls waiting for work, never
// finish on their own and would hold the shutdown for its whole grace
// period. Other requests keep their context and finish their work.
func untilShutdown(streams context.Context, inFlight *sync.WaitGroup, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inFlight.Add(1)
		defer inFlight.Done()
		if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(streams, cancel)()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// listenControl opens the control socket in LM_HOME (mode 0600: its
// owner is the authentication) through which `lm servers` commands reach
// the hub. A socket left by a gateway that died is replaced; one that
// answers belongs to a running gateway with the same LM_HOME.
func (s *Server) listenControl() (net.Listener, error) {
	path := servers.SocketPath(s.opts.Env.Home)
	if err := os.MkdirAll(s.opts.Env.Home, 0o700); err != nil {
		return nil, fmt.Errorf("gateway: create %s: %w", s.opts.Env.Home, err)
	}
	if conn, err := net.Dial("unix", path); err == nil {
		conn.Close()
		return nil, op.Errorf(op.KindUnavailable, "gateway: another gateway is using %s", path).WithHint("see 'lm gateway status'")
	}
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("gateway: control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("gateway: control socket: %w", err)
	}
	return ln, nil
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "server_time": s.opts.Env.Now().UTC()})
}

// health is GET /health: every service the gateway runs — the supervised
// servers, and the model endpoint behind prompt enhancement with its cache.
// A configured model that does not answer makes the gateway degraded.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	out := s.servers.Health()
	model, cache := s.enhance.Health(r.Context())
	out.Model, out.Enhancement = &model, &cache
	if model.Configured && !model.Reachable {
		out.Status = "degraded"
	}
	writeJSON(w, http.StatusOK, out)
}
