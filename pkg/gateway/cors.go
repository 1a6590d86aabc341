package gateway

import (
	"net/http"

	"lmtool.dev/lm/pkg/gatewayd"
)

// A browser lets a page on another origin read the gateway's answers only
// when the gateway says so (CORS). The gateway says so for the origins the
// person names (--allow-origin, [gateway] allow_origins) and for no other:
// there is no wildcard, and a request from any other origin is refused as
// before. No cookies are involved — a cross-origin client sends a bearer
// token, which a foreign page does not have.
const (
	corsMethods = "GET, POST, PUT, PATCH, DELETE"
	// corsHeaders are the request headers a client of the gateway sends:
	// the token, JSON bodies, MCP's session and version, event streams'
	// resume points and prompt enhancement's client name.
	corsHeaders = "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, Last-Event-Store, X-Client-Name"
	// corsExposed are the response headers such a client needs to read.
	corsExposed = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate"
	// corsMaxAge is how long, in seconds, a browser may reuse a preflight.
	corsMaxAge = "600"
)

// ParseOrigin checks an origin a person allows and returns it as browsers
// send it: see [gatewayd.ParseOrigin].
func ParseOrigin(s string) (string, error) { return gatewayd.ParseOrigin(s) }

// crossOrigin answers a request from an allowed origin: a preflight itself
// (before any token is asked for, since browsers send none with it),
// anything else by next with the headers that let the page read it.
func crossOrigin(w http.ResponseWriter, r *http.Request, origin string, next http.Handler) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Expose-Headers", corsExposed)
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		next.ServeHTTP(w, r)
		return
	}
	h.Set("Access-Control-Allow-Methods", corsMethods)
	h.Set("Access-Control-Allow-Headers", corsHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	// A page on a public address reaching the gateway on loopback asks
	// Chrome's Private Network Access first.
	if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
		h.Set("Access-Control-Allow-Private-Network", "true")
	}
	w.WriteHeader(http.StatusNoContent)
}
