package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"lmtool.dev/lm/pkg/op"
)

// sameOrigin is the DNS-rebinding and cross-site defence. A page on another
// site can make a browser send requests to 127.0.0.1, and a rebound domain
// can even pass as same-origin; so a request that reached a loopback
// listener must name a loopback Host, and a request that carries an Origin
// (every cross-origin fetch and every form post does) must come from the
// gateway's own origin.
func sameOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && isLoopback(local.String()) && !isLoopback(r.Host) {
			writeError(w, http.StatusForbidden, op.Errorf(op.KindDenied, "host %q is not this gateway's; requests to a loopback gateway must use localhost or a loopback address", r.Host).
				WithCategory("forbidden_host"))
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !originMatches(origin, r.Host) {
			writeError(w, http.StatusForbidden, op.Errorf(op.KindDenied, "origin %q may not use this gateway", origin).
				WithCategory("forbidden_origin").WithHint("only pages served by the gateway itself (http://%s) may call it", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isLoopback reports whether a host or host:port names the loopback
// interface.
func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

func originMatches(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

// authorized requires the bearer token when one is configured. Digests are
// compared so that neither the token's bytes nor its length leak through
// timing.
func (s *Server) authorized(next http.Handler) http.Handler {
	if s.opts.Token == "" {
		return next
	}
	want := sha256.Sum256([]byte(s.opts.Token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		given, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		got := sha256.Sum256([]byte(strings.TrimSpace(given)))
		if !ok || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lm"`)
			writeError(w, http.StatusUnauthorized, op.Errorf(op.KindDenied, "a valid bearer token is required").
				WithCategory("unauthorized").WithHint("send the header \"Authorization: Bearer TOKEN\" with the gateway's token (LM_API_TOKEN or --token-file)"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// credited records on each request who its caller is, for the operation
// to check: the page's routes serve the person who holds the gateway's
// token (or who started it without one), MCP's and spec 002's routes serve
// agents.
func credited(role op.Role, next http.Handler) http.Handler {
	c := op.Caller{Role: role}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(op.WithCaller(r.Context(), c)))
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

func (s *Server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		level := slog.LevelDebug
		if rec.status >= 400 || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			level = slog.LevelInfo
		}
		s.opts.Log.Log(r.Context(), level, "request", "method", r.Method, "path", r.URL.Path,
			"status", rec.status, "duration", time.Since(start).Round(time.Microsecond))
	})
}
