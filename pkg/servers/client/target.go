// Package client is lm's MCP client: it reaches any MCP server (a configured
// name, a URL speaking streamable HTTP or SSE, or a command speaking stdio),
// keeps the connection alive, validates and runs tool calls, and records
// them in a history, favourites and sequences.
package client

import (
	"context"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"lmtool.dev/lm/pkg/duration"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers"
)

// TokenEnv names the environment variable that holds a bearer token for
// --url targets when --bearer is not given.
const TokenEnv = "LM_SERVER_TOKEN"

// Target says how to reach an MCP server: exactly one of Name, URL and
// Command is set once it is resolved (Name stays as the label of a resolved
// configured server).
type Target struct {
	Name    string            `json:"name,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Command []string          `json:"command,omitempty"`
	// Env is added to a stdio server's environment (a configured
	// server's env; often secrets, so never stored in history).
	Env []string `json:"-"`
	// Timeout bounds each request: --timeout, else a configured server's
	// timeout; zero waits as long as the server takes.
	Timeout time.Duration `json:"-"`
	// Dropped names the credentials a stored target left out.
	Dropped []string `json:"dropped,omitempty"`
}

// String is how history and messages name the target.
func (t Target) String() string {
	switch {
	case t.Name != "":
		return t.Name
	case t.URL != "":
		return t.hidden().Replace(t.URL)
	default:
		return strings.Join(t.Command, " ")
	}
}

// stdio reports whether the target is a child process.
func (t Target) stdio() bool { return t.URL == "" }

// withoutSecrets is the target as history and favourites keep it, without
// a credential. The Authorization header goes, given again (--bearer,
// $LM_SERVER_TOKEN) when the call is run again; any other credential — a
// header named like one, the URL's password, a query parameter named like
// a key or token — nothing could give again, so it is left out and named
// in Dropped, and such a target cannot be run again.
func (t Target) withoutSecrets() Target {
	if t.Name != "" {
		// A configured server is resolved again from its configuration
		// when the call is rerun; its headers and env stay there.
		return Target{Name: t.Name}
	}
	if len(t.Headers) > 0 {
		h := map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(t.Headers)) {
			switch {
			case strings.EqualFold(k, "Authorization"):
			case credentialName(k):
				t.Dropped = append(t.Dropped, "header "+k)
			default:
				h[k] = t.Headers[k]
			}
		}
		t.Headers = h
	}
	if u, err := url.Parse(t.URL); err == nil && t.URL != "" {
		if _, has := u.User.Password(); has {
			u.User = url.User(u.User.Username())
			t.Dropped = append(t.Dropped, "the URL's password")
		}
		q := u.Query()
		for _, k := range slices.Sorted(maps.Keys(q)) {
			if credentialName(k) {
				q.Del(k)
				t.Dropped = append(t.Dropped, "query parameter "+k)
			}
		}
		if len(t.Dropped) > 0 {
			u.RawQuery = q.Encode()
			t.URL = u.String()
		}
	}
	return t
}

// hidden masks the URL's credentials (its password, the values of query
// parameters named like a key or token) wherever a message quotes the URL,
// as it was given or as net/http and url.URL.Redacted quote it (the
// password masked, the query not).
func (t Target) hidden() *strings.Replacer {
	u, err := url.Parse(t.URL)
	if err != nil || t.URL == "" {
		return strings.NewReplacer()
	}
	masked, quoted := *u, t.URL
	if password, has := u.User.Password(); has {
		masked.User = url.UserPassword(u.User.Username(), "***")
		quoted = strings.Replace(t.URL, ":"+password+"@", ":***@", 1) // net/http's own masking
	}
	q, secret := u.Query(), false
	for k := range q {
		if credentialName(k) {
			q.Set(k, "***")
			secret = true
		}
	}
	if !secret && quoted == t.URL {
		return strings.NewReplacer() // nothing to mask: the URL as given
	}
	if secret {
		masked.RawQuery = q.Encode()
	}
	display := strings.ReplaceAll(masked.String(), "%2A%2A%2A", "***")
	return strings.NewReplacer(t.URL, display, quoted, display, u.Redacted(), display)
}

// credentialName says whether a header or query parameter is named like
// one that carries a credential.
// It goes by whole words (api_key, X-Auth-Token, accessToken), so that
// author, keyword or passage are not taken for one.
func credentialName(name string) bool {
	if strings.EqualFold(name, "code") {
		return true // an OAuth authorization code
	}
	for _, word := range nameWords(name) {
		switch word {
		case "key", "apikey", "token", "secret", "password", "passwd", "pass", "auth", "authorization",
			"cookie", "session", "credential", "credentials", "signature", "sig":
			return true
		}
	}
	return false
}

// nameWords splits a header or parameter name into lower-case words, at
// every character that is no letter or digit and before each upper-case
// letter that follows a lower-case one.
func nameWords(name string) []string {
	var words []string
	var word []rune
	prev := rune(0)
	for _, c := range name {
		switch {
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			if len(word) > 0 {
				words, word = append(words, string(word)), nil
			}
		case unicode.IsUpper(c) && unicode.IsLower(prev):
			words, word = append(words, string(word)), []rune{unicode.ToLower(c)}
		default:
			word = append(word, unicode.ToLower(c))
		}
		prev = c
	}
	if len(word) > 0 {
		words = append(words, string(word))
	}
	return words
}

// lookup resolves a server configured for the hub (servers.json) to a
// target this client reaches the same way the hub would.
func lookup(ctx context.Context, env *op.Env, name string) (Target, error) {
	s, err := servers.Find(ctx, env, name)
	if err != nil {
		return Target{}, err
	}
	t := Target{Name: name, URL: s.URL, Headers: s.Headers, Timeout: s.CallTimeout()}
	if s.URL == "" {
		t.Command = append([]string{s.Command}, s.Args...)
		for k, v := range s.Env {
			t.Env = append(t.Env, k+"="+v)
		}
		sort.Strings(t.Env)
	}
	return t, nil
}

// noServerGiven is the error for a command that names no server, listing
// the configured ones a person could name.
func noServerGiven(env *op.Env) error {
	hint := "name a configured server, or use --url URL or -- CMD ARGS… at the end of the line"
	if names, err := servers.Names(env.Home); err == nil && len(names) > 0 {
		hint = "name a configured server (" + strings.Join(names, ", ") + "), or use --url URL or -- CMD ARGS… at the end of the line"
	}
	return op.Errorf(op.KindInvalid, "no server given").WithHint("%s", hint)
}

// given reports whether the input names a server in any of its ways.
func (in TargetInput) given() bool { return in.Server != "" || in.URL != "" || len(in.Command) > 0 }

// TargetInput are the fields every command that talks to a server shares.
type TargetInput struct {
	Server  string   `json:"server,omitempty" jsonschema:"a configured server's name"`
	URL     string   `json:"url,omitempty" jsonschema:"the server's URL: streamable HTTP, falling back to SSE"`
	Header  []string `json:"header,omitempty" jsonschema:"an HTTP header K:V sent with --url (repeatable)"`
	Bearer  string   `json:"bearer,omitempty" jsonschema:"a bearer token sent with --url (default $LM_SERVER_TOKEN)"`
	Command []string `json:"command,omitempty" jsonschema:"a stdio server: the program and its arguments (on the command line, the words after --)"`
	Timeout string   `json:"timeout,omitempty" jsonschema:"give up on a request the server has not answered after this long (e.g. 30s, 2m; exit 7); default: a configured server's timeout (60s unless set), no limit with a URL or command"`
}

// resolve turns the input into a target. A stdio command starts a program,
// so only a person at lm's command line may give one.
func (in TargetInput) resolve(ctx context.Context, env *op.Env) (Target, error) {
	timeout, err := duration.Field("--timeout", in.Timeout, 0)
	if err != nil {
		return Target{}, err
	}
	if timeout < 0 {
		return Target{}, op.Errorf(op.KindInvalid, "--timeout %q is negative", in.Timeout).WithHint("use %s", duration.Forms)
	}
	t, err := in.target(ctx, env)
	if timeout > 0 {
		t.Timeout = timeout
	}
	return t, err
}

func (in TargetInput) target(ctx context.Context, env *op.Env) (Target, error) {
	n := 0
	for _, set := range []bool{in.Server != "", in.URL != "", len(in.Command) > 0} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return Target{}, noServerGiven(env)
	case n > 1:
		return Target{}, op.Errorf(op.KindInvalid, "give one server: a name, --url or -- CMD, not several")
	case len(in.Command) > 0:
		if !mayStartCommand(env) {
			return Target{}, op.Errorf(op.KindDenied, "a stdio command can only be given on lm's command line").
				WithHint("over MCP or HTTP, use a configured server's name or a URL")
		}
		return Target{Command: in.Command}, nil
	case in.URL != "":
		return httpTarget(in.URL, in.Header, in.Bearer, env.Getenv(TokenEnv))
	}
	return lookup(ctx, env, in.Server)
}

// httpTarget checks a URL and builds its headers; the bearer token falls
// back to $LM_SERVER_TOKEN.
func httpTarget(raw string, headers []string, bearer, defaultBearer string) (Target, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Target{}, op.Errorf(op.KindInvalid, "--url %q is not an http or https URL", raw).
			WithHint("for example --url http://127.0.0.1:3001/mcp")
	}
	t := Target{URL: raw}
	for _, h := range headers {
		k, v, err := ParseHeader(h)
		if err != nil {
			return Target{}, err
		}
		if t.Headers == nil {
			t.Headers = map[string]string{}
		}
		t.Headers[k] = v
	}
	if bearer == "" {
		bearer = defaultBearer
	}
	if bearer != "" {
		if t.Headers == nil {
			t.Headers = map[string]string{}
		}
		t.Headers["Authorization"] = "Bearer " + bearer
	}
	return t, nil
}

// ParseHeader splits "Name: value" (curl's form). The name must be an HTTP
// token and the value may not hold line breaks, so a header can never
// smuggle another one.
func ParseHeader(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, ":")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !ok || name == "" {
		return "", "", op.Errorf(op.KindInvalid, "header %q is not NAME:VALUE", s).WithHint("for example --header 'X-Api-Key: abc'")
	}
	for _, r := range name {
		if !isTokenChar(r) {
			return "", "", op.Errorf(op.KindInvalid, "header name %q has the character %q, which HTTP does not allow", name, r)
		}
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return "", "", op.Errorf(op.KindInvalid, "header %q: the value may not contain line breaks or NUL", name)
	}
	return name, value, nil
}

func isTokenChar(r rune) bool {
	return r < 127 && r > 32 && !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
}
