// Package servers is the configuration of the MCP servers lm's gateway
// supervises and proxies and the `lm servers …` operations on it. Each
// concern has its file, which opens with its contract: config.go
// ($LM_HOME/servers.json, in the mcpServers shape of Claude Desktop and
// Claude Code, extended with the hub's fields), secrets.go and
// secretops.go (${secret:NAME}: the secrets file and the keyring),
// clients.go and importexport.go (other clients' files), install.go (npm),
// control.go (the running gateway's control socket), status.go (servers'
// states), connect.go (the stdio↔HTTP bridge of lm mcp --connect) and
// logs.go (servers' stderr).
package servers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"lmtool.dev/lm/pkg/privatefile"
)

// FileName is the servers file inside LM_HOME.
const FileName = "servers.json"

// Transports a server may use.
const (
	Stdio = "stdio"
	HTTP  = "http"
	SSE   = "sse"
)

// Defaults for the optional fields.
const (
	DefaultMaxRestarts         = 3
	DefaultRestartDelay        = time.Second
	DefaultHealthCheckInterval = 30 * time.Second
	DefaultTimeout             = 60 * time.Second
	DefaultFailureThreshold    = 3
	DefaultRecoveryTimeout     = 30 * time.Second
	DefaultCacheMaxSize        = 1000
	DefaultCacheTTL            = 5 * time.Minute
)

// Config is the whole servers file.
type Config struct {
	Servers  map[string]*Server `json:"mcpServers"`
	Settings Settings           `json:"settings,omitzero"`
}

// Server is one configured MCP server. Durations are in seconds.
type Server struct {
	Command             string              `json:"command,omitempty"`
	Args                []string            `json:"args,omitempty"`
	Env                 map[string]string   `json:"env,omitempty"`
	URL                 string              `json:"url,omitempty"`
	Headers             map[string]string   `json:"headers,omitempty"`
	Transport           string              `json:"transport,omitempty"`
	Package             string              `json:"package,omitempty"`
	Description         string              `json:"description,omitempty"`
	Enabled             *bool               `json:"enabled,omitempty"`
	AutoStart           bool                `json:"auto_start,omitempty"`
	RestartOnFailure    *bool               `json:"restart_on_failure,omitempty"`
	MaxRestarts         *int                `json:"max_restarts,omitempty"`
	RestartDelay        float64             `json:"restart_delay,omitempty"`
	HealthCheckInterval float64             `json:"health_check_interval,omitempty"`
	Timeout             float64             `json:"timeout,omitempty"`
	Tools               *ToolFilter         `json:"tools,omitempty"`
	CacheTools          map[string][]string `json:"cache_tools,omitempty"`
	// CacheResources are the resource URIs (or path.Match patterns such
	// as file:///docs/*) whose reads the gateway may cache. None by
	// default: a resource may change on every read, and nothing in the
	// protocol says which do not.
	CacheResources []string `json:"cache_resources,omitempty"`
}

// CachesResource reports whether reads of uri may be served from the
// cache.
func (s *Server) CachesResource(uri string) bool {
	for _, p := range s.CacheResources {
		if ok, _ := path.Match(p, uri); ok {
			return true
		}
	}
	return false
}

// ToolFilter limits which of a server's tools the gateway exposes. Entries
// are tool names or shell patterns (read_*); deny wins over allow.
type ToolFilter struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Settings are the hub-wide knobs. Durations are in seconds.
type Settings struct {
	CBFailureThreshold int     `json:"cb_failure_threshold,omitempty"`
	CBRecoveryTimeout  float64 `json:"cb_recovery_timeout,omitempty"`
	CacheMaxSize       int     `json:"cache_max_size,omitempty"`
	CacheTTL           float64 `json:"cache_ttl,omitempty"`
}

// FailureThreshold is cb_failure_threshold with its default.
func (s Settings) FailureThreshold() int {
	return positiveOr(s.CBFailureThreshold, DefaultFailureThreshold)
}

// RecoveryTimeout is cb_recovery_timeout with its default.
func (s Settings) RecoveryTimeout() time.Duration {
	return seconds(s.CBRecoveryTimeout, DefaultRecoveryTimeout)
}

// CacheSize is cache_max_size with its default.
func (s Settings) CacheSize() int { return positiveOr(s.CacheMaxSize, DefaultCacheMaxSize) }

// TTL is cache_ttl with its default.
func (s Settings) TTL() time.Duration { return seconds(s.CacheTTL, DefaultCacheTTL) }

// positiveOr is v when it is set (positive), else the default.
func positiveOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func seconds(v float64, def time.Duration) time.Duration {
	if v > 0 {
		return time.Duration(v * float64(time.Second))
	}
	return def
}

// Kind is the server's transport, inferred from command or url when the
// transport field is absent.
func (s *Server) Kind() string {
	if s.Transport != "" {
		return s.Transport
	}
	if s.URL != "" {
		return HTTP
	}
	return Stdio
}

// IsEnabled is the admin state: servers are enabled unless disabled.
func (s *Server) IsEnabled() bool { return s.Enabled == nil || *s.Enabled }

// Restarts reports whether a failed server is restarted (default true).
func (s *Server) Restarts() bool { return s.RestartOnFailure == nil || *s.RestartOnFailure }

// RestartLimit is max_restarts with its default; 0 means unlimited.
func (s *Server) RestartLimit() int {
	if s.MaxRestarts == nil {
		return DefaultMaxRestarts
	}
	return *s.MaxRestarts
}

// FirstRestartDelay is restart_delay with its default; it doubles with
// every consecutive restart.
func (s *Server) FirstRestartDelay() time.Duration {
	return seconds(s.RestartDelay, DefaultRestartDelay)
}

// HealthInterval is health_check_interval with its default.
func (s *Server) HealthInterval() time.Duration {
	return seconds(s.HealthCheckInterval, DefaultHealthCheckInterval)
}

// CallTimeout is timeout with its default.
func (s *Server) CallTimeout() time.Duration { return seconds(s.Timeout, DefaultTimeout) }

// Downloads reports whether the command fetches its package on first use
// (npx, uvx, …), so a first start may take a minute.
func (s *Server) Downloads() bool {
	switch strings.TrimSuffix(filepath.Base(s.Command), ".cmd") {
	case "npx", "uvx", "bunx", "pnpx", "pipx", "dlx":
		return true
	}
	return false
}

// Exposes reports whether the tool passes the allow and deny lists.
func (s *Server) Exposes(tool string) bool {
	if s.Tools == nil {
		return true
	}
	match := func(patterns []string) bool {
		return slices.ContainsFunc(patterns, func(p string) bool {
			ok, _ := filepath.Match(p, tool)
			return ok
		})
	}
	if match(s.Tools.Deny) {
		return false
	}
	return len(s.Tools.Allow) == 0 || match(s.Tools.Allow)
}

// Names lists the configured servers in order.
func (c *Config) Names() []string {
	names := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Path is the servers file in home.
func Path(home string) string { return filepath.Join(home, FileName) }

// Load reads the servers file; a missing file is an empty configuration.
func Load(home string) (*Config, error) {
	path := Path(home)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Config{Servers: map[string]*Server{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return Parse(path, data)
}

// Update loads the servers file under an exclusive lock, lets change edit
// it, and writes it back atomically, so concurrent edits are never lost.
func Update(home string, change func(*Config) error) (*Config, error) {
	var cfg *Config
	err := privatefile.WithLock(Path(home), func() error {
		var err error
		if cfg, err = Load(home); err != nil {
			return err
		}
		if err := change(cfg); err != nil {
			return err
		}
		if err := cfg.Validate(Path(home)); err != nil {
			return err
		}
		data, err := json.MarshalIndent(cfg, "", "  ")
		if err != nil {
			return fmt.Errorf("encode %s: %w", Path(home), err)
		}
		// The file may hold API keys in env: only the owner reads it.
		return privatefile.Write(Path(home), append(data, '\n'))
	})
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// serverFields are the accepted per-server fields; "type" is the name
// Claude Code and VS Code use for transport.
var serverFields = []string{"args", "auto_start", "cache_resources", "cache_tools", "command", "description", "enabled", "env", "headers",
	"health_check_interval", "max_restarts", "package", "restart_delay", "restart_on_failure", "timeout", "tools",
	"transport", "type", "url"}

var settingsFields = []string{"cache_max_size", "cache_ttl", "cb_failure_threshold", "cb_recovery_timeout"}

// Parse decodes and validates a servers file. file names it in errors.
// Both the mcpServers shape (Claude Desktop, Claude Code, Cursor) and VS
// Code's servers shape are read.
func Parse(file string, data []byte) (*Config, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, &ConfigError{File: file, Msg: fmt.Sprintf("not a JSON object: %v", err), Accepted: `{"mcpServers": {"NAME": {"command": "…", "args": […]}}}`}
	}
	cfg := &Config{Servers: map[string]*Server{}}
	var seen []string
	for key, raw := range top {
		switch key {
		case "mcpServers", "servers":
			seen = append(seen, key)
			servers, err := parseServers(file, key, raw)
			if err != nil {
				return nil, err
			}
			cfg.Servers = servers
		case "settings":
			if err := decodeStrict(file, "settings", raw, settingsFields, &cfg.Settings); err != nil {
				return nil, err
			}
		case "$schema", "inputs":
			// VS Code's schema reference and input prompts carry no servers.
		default:
			return nil, &ConfigError{File: file, Field: key, Msg: "unknown top-level field", Accepted: "mcpServers (or servers), settings"}
		}
	}
	if len(seen) > 1 {
		return nil, &ConfigError{File: file, Field: "servers", Msg: "both mcpServers and servers are present", Accepted: "one of them"}
	}
	if err := cfg.Validate(file); err != nil {
		return nil, err
	}
	return cfg, nil
}

func parseServers(file, key string, raw json.RawMessage) (map[string]*Server, error) {
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil || entries == nil {
		return nil, &ConfigError{File: file, Field: key, Msg: "must be an object of servers by name", Accepted: `{"NAME": {"command": "…"}}`}
	}
	servers := map[string]*Server{}
	for name, raw := range entries {
		field := key + "." + name
		var s struct {
			Server
			Type string `json:"type"`
		}
		if err := decodeStrict(file, field, raw, serverFields, &s); err != nil {
			return nil, err
		}
		srv := s.Server
		if s.Type != "" {
			if srv.Transport != "" && srv.Transport != s.Type {
				return nil, &ConfigError{File: file, Field: field + ".type", Msg: fmt.Sprintf("type %q contradicts transport %q", s.Type, srv.Transport), Accepted: "one of them"}
			}
			srv.Transport = s.Type
		}
		if srv.Transport == "streamable-http" || srv.Transport == "streamableHttp" {
			srv.Transport = HTTP
		}
		servers[name] = &srv
	}
	return servers, nil
}

// decodeStrict decodes an object, rejecting unknown fields and wrong types
// with the field's full name and what is accepted.
func decodeStrict(file, field string, raw json.RawMessage, accepted []string, into any) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return &ConfigError{File: file, Field: field, Msg: "must be an object", Accepted: "fields " + strings.Join(accepted, ", ")}
	}
	for k := range obj {
		if !slices.Contains(accepted, k) {
			return &ConfigError{File: file, Field: field + "." + k, Msg: "unknown field", Accepted: "fields " + strings.Join(accepted, ", ")}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(into); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return &ConfigError{File: file, Field: field + "." + strings.TrimPrefix(typeErr.Field, "Server."), Msg: "is a " + typeErr.Value, Accepted: describeGoType(typeErr.Type.String())}
		}
		return &ConfigError{File: file, Field: field, Msg: err.Error()}
	}
	return nil
}

func describeGoType(t string) string {
	switch {
	case t == "string":
		return "a string"
	case t == "bool", t == "*bool":
		return "true or false"
	case t == "int", t == "*int":
		return "a whole number"
	case t == "float64":
		return "a number of seconds"
	case strings.HasPrefix(t, "[]"):
		return "an array of strings"
	case strings.HasPrefix(t, "map["):
		return "an object"
	}
	return t
}

// ConfigError is an invalid servers file: where, what, and what would be
// accepted.
type ConfigError struct {
	File, Field, Msg, Accepted string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Msg)
	if e.Accepted != "" {
		b.WriteString(" (accepted: " + e.Accepted + ")")
	}
	return b.String()
}

// NamePattern is what a server name may be: it becomes part of tool names
// (NAME__tool, at most 64 characters) and of URLs (/mcp/NAME).
var NamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

var referencePattern = regexp.MustCompile(`\$\{([^}]*)\}`)

var referenceName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Validate checks every server; file names the source in errors.
func (c *Config) Validate(file string) error {
	for _, name := range c.Names() {
		s := c.Servers[name]
		field := "mcpServers." + name
		bad := func(sub, msg, accepted string) error {
			return &ConfigError{File: file, Field: field + sub, Msg: msg, Accepted: accepted}
		}
		if !NamePattern.MatchString(name) || strings.Contains(name, "__") || name == "sse" || name == "message" {
			return bad("", "is not a valid server name", "1–32 letters, digits, - and _ (no __), starting with a letter or digit; not sse or message, which /mcp/ uses")
		}
		if s == nil {
			return bad("", "is null", "an object")
		}
		switch s.Kind() {
		case Stdio:
			if s.Command == "" {
				return bad(".command", "is missing", "the program to run, e.g. npx (with args), or url for an http server")
			}
			if s.URL != "" {
				return bad(".url", "is set on a stdio server", "command and args for stdio, or url with transport http")
			}
		case HTTP, SSE:
			if s.URL == "" {
				return bad(".url", "is missing", "the server's http:// or https:// URL")
			}
			if s.Command != "" {
				return bad(".command", "is set on an "+s.Kind()+" server", "url only")
			}
			if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") && !strings.HasPrefix(s.URL, "${") {
				return bad(".url", fmt.Sprintf("%q is not an http URL", s.URL), "http://… or https://…")
			}
		default:
			return bad(".transport", fmt.Sprintf("%q is not a transport", s.Transport), "stdio, http, sse")
		}
		if s.MaxRestarts != nil && *s.MaxRestarts < 0 {
			return bad(".max_restarts", "is negative", "0 (unlimited) or more")
		}
		for f, v := range map[string]float64{".restart_delay": s.RestartDelay, ".health_check_interval": s.HealthCheckInterval, ".timeout": s.Timeout} {
			if v < 0 {
				return bad(f, "is negative", "a number of seconds above 0")
			}
		}
		if s.Tools != nil {
			for _, p := range slices.Concat(s.Tools.Allow, s.Tools.Deny) {
				if _, err := filepath.Match(p, ""); err != nil {
					return bad(".tools", fmt.Sprintf("%q is not a valid pattern", p), "tool names or shell patterns such as read_*")
				}
			}
		}
		for _, p := range s.CacheResources {
			if _, err := path.Match(p, ""); err != nil {
				return bad(".cache_resources", fmt.Sprintf("%q is not a valid pattern", p), "resource URIs or patterns such as file:///docs/*")
			}
		}
		// A program's arguments are public on the machine: any local user
		// reads them with ps or in /proc. Secrets go to its environment.
		for _, v := range append([]string{s.Command}, s.Args...) {
			for _, m := range referencePattern.FindAllStringSubmatch(v, -1) {
				if kind, name, _ := strings.Cut(m[1], ":"); kind == "secret" {
					return bad(".args", fmt.Sprintf("puts the secret %s on the command line, where every local user can read it (ps, /proc)", name),
						fmt.Sprintf("the secret in env, e.g. \"env\": {\"TOKEN\": \"${secret:%s}\"} (lm servers add --env 'TOKEN=${secret:%s}'), read by the server from its environment", name, name))
				}
			}
		}
		for _, v := range s.texts() {
			for _, m := range referencePattern.FindAllStringSubmatch(v, -1) {
				kind, name, _ := strings.Cut(m[1], ":")
				if (kind != "env" && kind != "secret") || !referenceName.MatchString(name) {
					return bad("", fmt.Sprintf("reference %s is not supported", m[0]), "${env:NAME} or ${secret:NAME} (letters, digits, _ . -)")
				}
			}
		}
	}
	if c.Settings.CBFailureThreshold < 0 || c.Settings.CBRecoveryTimeout < 0 || c.Settings.CacheMaxSize < 0 || c.Settings.CacheTTL < 0 {
		return &ConfigError{File: file, Field: "settings", Msg: "has a negative value", Accepted: "0 (the default) or more"}
	}
	return nil
}

// texts are the server's values that may hold references.
func (s *Server) texts() []string {
	return slices.Concat([]string{s.Command, s.URL}, s.Args, slices.Collect(maps.Values(s.Env)), slices.Collect(maps.Values(s.Headers)))
}

// secretNames are the secrets the server references, sorted.
func (s *Server) secretNames() []string {
	var names []string
	for _, v := range s.texts() {
		for _, m := range referencePattern.FindAllStringSubmatch(v, -1) {
			if kind, name, _ := strings.Cut(m[1], ":"); kind == "secret" {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Resolved is a server ready to start: references replaced by their
// values. It also returns the secrets it used, so whoever reports on the
// server can hide them.
func (s *Server) Resolved(r Resolver) (*Server, map[string]string, error) {
	out := *s
	var missingEnv []string
	used := map[string]string{}
	secretErrs := map[string]error{}
	expand := func(v string) string {
		return referencePattern.ReplaceAllStringFunc(v, func(ref string) string {
			kind, name, _ := strings.Cut(ref[2:len(ref)-1], ":")
			if kind == "env" {
				val, ok := r.Env(name)
				if !ok {
					missingEnv = append(missingEnv, name)
				}
				return val
			}
			if val, ok := used[name]; ok {
				return val
			}
			if secretErrs[name] != nil {
				return ""
			}
			val, err := r.Secret(name)
			if err != nil {
				secretErrs[name] = err
				return ""
			}
			used[name] = val
			return val
		})
	}
	out.Command, out.URL = expand(s.Command), expand(s.URL)
	out.Args = make([]string, len(s.Args))
	for i, a := range s.Args {
		out.Args[i] = expand(a)
	}
	expandMap := func(m map[string]string) map[string]string {
		res := make(map[string]string, len(m))
		for k, v := range m {
			res[k] = expand(v)
		}
		return res
	}
	out.Env, out.Headers = expandMap(s.Env), expandMap(s.Headers)
	var problems []string
	if len(missingEnv) > 0 {
		slices.Sort(missingEnv)
		problems = append(problems, fmt.Sprintf("environment variable %s is not set (referenced as ${env:…})", strings.Join(slices.Compact(missingEnv), ", ")))
	}
	// Secrets missing from the same places are named together, and a
	// broken secrets file, which fails every name alike, is named once.
	var secretProblems []string
	missing := map[string][]string{} // where → names
	for name, err := range secretErrs {
		var m *MissingSecretError
		if errors.As(err, &m) {
			missing[m.Where] = append(missing[m.Where], name)
		} else {
			secretProblems = append(secretProblems, err.Error())
		}
	}
	for where, names := range missing {
		slices.Sort(names)
		secretProblems = append(secretProblems, fmt.Sprintf("secret %s is %s", strings.Join(names, ", "), where))
	}
	slices.Sort(secretProblems)
	problems = append(problems, slices.Compact(secretProblems)...)
	if len(problems) > 0 {
		return nil, nil, errors.New(strings.Join(problems, "; "))
	}
	return &out, used, nil
}

// Redacted is the server as shown by list, show and the HTTP API: literal
// env and header values (often API keys) are hidden; references stay.
func (s *Server) Redacted() *Server {
	r := *s
	redact := func(m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		out := make(map[string]string, len(m))
		for k, v := range m {
			if referencePattern.MatchString(v) && referencePattern.ReplaceAllString(v, "") == "" {
				out[k] = v
			} else {
				out[k] = "<redacted>"
			}
		}
		return out
	}
	r.Env, r.Headers = redact(s.Env), redact(s.Headers)
	return &r
}
