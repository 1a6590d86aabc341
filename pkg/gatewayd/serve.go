package gatewayd

import (
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"lmtool.dev/lm/pkg/op"
)

// What `lm gateway` (serving in the foreground) and `lm gateway start`
// (which passes its flags on to a background `lm gateway`) both check and
// say, so a mistake fails the same way whichever started it.

// DefaultAddr is where the gateway listens unless told otherwise: loopback
// only, on a port no common development server uses.
const DefaultAddr = "127.0.0.1:7437"

// Auth is the person's token the flags and environment give ("": the one
// in LM_HOME), or no token at all with noToken, which is refused for an
// address beyond loopback.
func Auth(env *op.Env, addr, tokenFile string, noToken bool) (tok string, none bool, err error) {
	if noToken {
		if tokenFile != "" {
			return "", false, op.Errorf(op.KindInvalid, "--no-token and --token-file contradict each other")
		}
		if !IsLoopback(addr) {
			return "", false, op.Errorf(op.KindInvalid, "--no-token is refused on %s: beyond loopback, anyone who reaches the address could add instructions and drive the tools; listen on 127.0.0.1 or keep the token", addr)
		}
		return "", true, nil
	}
	if tokenFile != "" {
		data, err := os.ReadFile(tokenFile)
		if err != nil {
			return "", false, op.Errorf(op.KindInvalid, "read token file: %w", err)
		}
		tok := strings.TrimSpace(string(data))
		if tok == "" {
			return "", false, op.Errorf(op.KindInvalid, "token file %s is empty", tokenFile)
		}
		return tok, false, nil
	}
	return strings.TrimSpace(env.Getenv("LM_API_TOKEN")), false, nil
}

// IsLoopback reports whether hostport's host is a loopback address or
// localhost; an empty host listens on every interface.
func IsLoopback(hostport string) bool {
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

// PageURL is the page's address on a gateway listening at addr, carrying
// the person's token (if any) in the fragment, which browsers never send to
// a server: the page keeps it and drops it from the address bar.
func PageURL(addr, token string) string {
	u := "http://" + addr + "/"
	if token != "" {
		u += "#token=" + url.QueryEscape(token)
	}
	return u
}

// Reachable is an address to open in a browser for the listening address
// addr: one on all interfaces (0.0.0.0 or ::, which Go reports as [::])
// is reached on this machine through loopback.
func Reachable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err == nil && ip != nil && ip.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// LogLevel reads --log-level (or LM_LOG_LEVEL).
func LogLevel(name string) (slog.Level, error) {
	levels := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}
	level, ok := levels[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return 0, op.Errorf(op.KindInvalid, "--log-level (or LM_LOG_LEVEL) %q is not a log level", name).
			WithHint("use debug, info, warn or error")
	}
	return level, nil
}

// AgentRoots are the directories agents work beneath (--root), absolute,
// else the working directory.
func AgentRoots(dirs []string) ([]string, error) {
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	roots := make([]string, 0, len(dirs))
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, op.Errorf(op.KindInvalid, "--root %s: %v", d, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return nil, op.Errorf(op.KindInvalid, "--root %s is not a directory", d)
		}
		roots = append(roots, abs)
	}
	return roots, nil
}

// ParseOrigin checks an origin a person allows and returns it as browsers
// send it in the Origin header: scheme://host[:port], lower case, without a
// default port. A wildcard, "null", a path, a query or credentials are
// refused: each would let in more than the one site the person means.
func ParseOrigin(s string) (string, error) {
	invalid := func(why string) error {
		return op.Errorf(op.KindInvalid, "origin %q %s", s, why).
			WithHint("name each origin as the browser shows it, scheme://host[:port], e.g. http://localhost:5173")
	}
	if s == "*" || strings.EqualFold(s, "null") {
		return "", invalid("would allow every page: no wildcard origin is accepted")
	}
	u, err := url.Parse(strings.TrimSuffix(s, "/"))
	switch {
	case err != nil:
		return "", invalid("is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", invalid("is not an http:// or https:// origin")
	case u.Host == "" || u.Opaque != "":
		return "", invalid("has no host")
	case u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.Contains(s, "*"):
		return "", invalid("is more than scheme://host[:port]")
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if port := u.Port(); (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		host = strings.TrimSuffix(host, ":"+port)
	}
	return scheme + "://" + host, nil
}

// AllowedOrigins are the other origins whose pages may call the gateway:
// [gateway] allow_origins in home's config.toml and those named on the
// command line (--allow-origin), each checked.
func AllowedOrigins(home string, named []string) ([]string, error) {
	settings, err := LoadSettings(home)
	if err != nil {
		return nil, op.Errorf(op.KindInvalid, "%w", err)
	}
	origins := append(settings.AllowOrigins, named...)
	for i, o := range origins {
		if origins[i], err = ParseOrigin(o); err != nil {
			return nil, err
		}
	}
	return origins, nil
}
