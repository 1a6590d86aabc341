package gateway

import (
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"lmtool.dev/lm/pkg/gatewayd"
	"lmtool.dev/lm/pkg/op"
)

// sameOrigin is the DNS-rebinding and cross-site defence, on every address
// the gateway listens on. A page on another site can make a browser send
// requests to the gateway, and a rebound domain can even pass as
// same-origin; so a request must name the gateway by an address (a loopback
// one on a loopback listener) or as localhost, never by a domain name, and
// a request that carries an Origin (every cross-origin fetch and every form
// post does) must come from the gateway's own origin or one the person
// allowed, which gets CORS (see crossOrigin).
func (s *Server) sameOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Whether a browser may read an answer depends on the Origin it
		// was asked from: caches must keep them apart.
		w.Header().Add("Vary", "Origin")
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if local != nil && !hostAllowed(r.Host, local.String()) {
			writeError(w, http.StatusForbidden, op.Errorf(op.KindDenied, "host %q is not this gateway's", r.Host).
				WithCategory("forbidden_host").
				WithHint("address the gateway by its IP address or as localhost (http://%s); a domain name could be rebound to it by any web page", local))
			return
		}
		origin := r.Header.Get("Origin")
		switch {
		case origin == "" || originMatches(origin, r.Host):
			next.ServeHTTP(w, r)
		case s.origins[origin]:
			crossOrigin(w, r, origin, next)
		default:
			writeError(w, http.StatusForbidden, op.Errorf(op.KindDenied, "origin %q may not use this gateway", origin).
				WithCategory("forbidden_origin").
				WithHint("only pages served by the gateway itself (http://%s) may call it, and those of origins the person allows with 'lm gateway --allow-origin ORIGIN'", r.Host))
		}
	})
}

// hostAllowed reports whether a request's Host may reach the listener at
// local: a loopback listener answers to loopback names only; any listener
// answers to IP addresses and localhost, which no DNS answer can rebind.
func hostAllowed(host, local string) bool {
	if IsLoopback(local) {
		return IsLoopback(host)
	}
	name, _, err := net.SplitHostPort(host)
	if err != nil {
		name = host
	}
	name = strings.Trim(name, "[]")
	_, err = netip.ParseAddr(name)
	return err == nil || strings.EqualFold(name, "localhost")
}

// IsLoopback reports whether an address (host:port, or a host alone)
// names this machine's loopback only.
func IsLoopback(hostport string) bool { return gatewayd.IsLoopback(hostport) }

func originMatches(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

// jsonBodies refuses a request body that is not declared as JSON. Every
// route that takes a body takes JSON, and only a body declared as
// text/plain, a form or multipart can cross origins without the browser
// asking the gateway first.
func jsonBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("Content-Type"); ct != "application/json" && r.ContentLength != 0 && r.Method != http.MethodGet && r.Method != http.MethodHead {
			if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
				writeError(w, http.StatusUnsupportedMediaType, op.Errorf(op.KindInvalid, "the request body must be JSON, sent as Content-Type: application/json (got %q)", r.Header.Get("Content-Type")).
					WithCategory("unsupported_media_type").WithHint("send the header \"Content-Type: application/json\" with a JSON body"))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// face is the kind of client a route serves, which decides who its
// callers are when they present no token.
type face int

const (
	// pageFace is the page's routes (the queue's API, the servers'
	// dashboard): with --no-token, their callers are the person.
	pageFace face = iota
	// agentFace is MCP and spec 002's protocol: with --no-token, their
	// callers are anonymous agents.
	agentFace
)

// identified establishes who is calling from the request's bearer token
// (or, opening an event stream without one, a ticket: see tickets) and
// records it on the request's context for the operation to read. With
// tokens on, a request without a token the gateway knows gets 401 before
// anything runs.
func (s *Server) identified(f face, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := bearer(r.Header.Get("Authorization"))
		ticketCaller, ticketed := s.takeTicket(r)
		c, ok, err := s.verifier.Identify(tok)
		switch {
		case err != nil:
			s.opts.Log.Error("reading the agent tokens", "err", err)
			writeError(w, http.StatusInternalServerError, err)
			return
		case ok:
		case ticketed && tok == "" && !s.opts.NoToken:
			c = ticketCaller
		case s.opts.NoToken && f == pageFace:
			c = op.Caller{Role: op.RolePerson}
		case s.opts.NoToken:
			c = op.Caller{Role: op.RoleAgent}
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="lm"`)
			writeError(w, http.StatusUnauthorized, op.Errorf(op.KindDenied, "a valid bearer token is required").
				WithCategory("unauthorized").
				WithHint("send \"Authorization: Bearer TOKEN\" with the person's token (the URL 'lm gateway' prints carries it) or an agent's token ('lm gateway token add NAME'); "+
					"an event stream may instead take ?ticket= from POST /api/tickets, once, within %s", ticketTTL))
			return
		}
		next.ServeHTTP(w, r.WithContext(op.WithCaller(r.Context(), c)))
	})
}

// bearer is the token of an "Authorization: Bearer TOKEN" header; the
// scheme is case-insensitive (RFC 9110 §11.1).
func bearer(header string) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// personOnly lets only the person through: the page with the person's
// token (or any page caller with --no-token). Requests that only read
// (GET, HEAD) pass when only changes are the person's.
func personOnly(changesOnly bool, what string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := op.CallerFrom(r.Context())
		if c.IsPerson() || (changesOnly && (r.Method == http.MethodGet || r.Method == http.MethodHead)) {
			next.ServeHTTP(w, r)
			return
		}
		writeError(w, http.StatusForbidden, op.Errorf(op.KindDenied, "%s is the person's only: %s may not use it", what, c).
			WithCategory("denied").
			WithHint("use the page opened from the URL 'lm gateway' prints, or lm on the command line"))
	})
}

// limitBody caps request bodies so one request cannot exhaust memory.
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		}
		next.ServeHTTP(w, r)
	})
}

// statusRecorder remembers the status a handler wrote, for the access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush on the real writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush keeps streaming responses (SSE) streaming through the recorder.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// logged writes a line per request: at Info for a failure and for a
// change (a method other than GET and HEAD), else at Debug. A message to an
// MCP endpoint that succeeds is no change of its own: each tool call has
// its line in the call log (/mcp) and its entry in the hub's activity
// (/mcp/NAME), and formatting a second line for every message cost a
// proxied call more than the hub's own work on it.
func (s *Server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		level := slog.LevelDebug
		if rec.status >= 400 || (r.Method != http.MethodGet && r.Method != http.MethodHead && !mcpMessage(r)) {
			level = slog.LevelInfo
		}
		if !s.opts.Log.Enabled(r.Context(), level) {
			return
		}
		s.opts.Log.Log(r.Context(), level, "request", "method", r.Method, "path", r.URL.Path,
			"status", rec.status, "duration", time.Since(start).Round(time.Microsecond))
	})
}

// mcpMessage reports whether r posts a message to an MCP endpoint: /mcp,
// a server's /mcp/NAME (and its path form), the legacy /mcp/message.
func mcpMessage(r *http.Request) bool {
	return r.Method == http.MethodPost && (r.URL.Path == "/mcp" || strings.HasPrefix(r.URL.Path, "/mcp/"))
}
