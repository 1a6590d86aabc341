package servers

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"lmtool.dev/lm/pkg/op"
)

// A supervised server's state as the gateway reports it, and the
// operations that ask the running gateway for it or change it
// (servers_status, _start, _stop, _restart) over its control socket.

// States a supervised server is in. Admin state (enabled) is kept apart:
// a disabled server is "stopped" and says so in Enabled.
const (
	Stopped    = "stopped"
	Starting   = "starting"
	Installing = "installing" // first start of an npx/uvx server, still downloading
	Running    = "running"
	Degraded   = "degraded" // running, but its health probe answers slowly
	Restarting = "restarting"
	Failed     = "failed" // gave up: crash loop, or it cannot start
	Stopping   = "stopping"
)

// Breaker states, as spec 004 names them.
const (
	BreakerClosed   = "CLOSED"
	BreakerOpen     = "OPEN"
	BreakerHalfOpen = "HALF_OPEN"
)

// Status is one server as the running gateway sees it: spec 004's
// ServerStatus and ProcessInfo, the breaker, and what it serves.
type Status struct {
	Name         string      `json:"name"`
	Description  string      `json:"description,omitempty"`
	Transport    string      `json:"transport"`
	Enabled      bool        `json:"enabled"`
	AutoStart    bool        `json:"auto_start"`
	State        string      `json:"state" jsonschema:"stopped, starting, installing, running, degraded, restarting, failed or stopping"`
	Pid          int         `json:"pid,omitempty"`
	StartedAt    *time.Time  `json:"started_at,omitempty"`
	RestartCount int         `json:"restart_count"`
	LastError    string      `json:"last_error,omitempty" jsonschema:"why it last failed, with the tail of its stderr"`
	LastExit     string      `json:"last_exit,omitempty" jsonschema:"how the process last ended"`
	NextRetryAt  *time.Time  `json:"next_retry_at,omitempty"`
	LatencyMS    float64     `json:"latency_ms,omitempty" jsonschema:"the last health probe's round trip"`
	Tools        int         `json:"tools"`
	Prompts      int         `json:"prompts"`
	Resources    int         `json:"resources"`
	Collisions   []string    `json:"collisions,omitempty" jsonschema:"names not exposed on /mcp because another tool already has them"`
	Unlisted     []string    `json:"unlisted,omitempty" jsonschema:"tools left off /mcp because MCP clients reject their schemas, and why; /mcp/NAME serves them as the server gave them"`
	Breaker      BreakerInfo `json:"breaker"`
}

// BreakerInfo is a server's circuit breaker.
type BreakerInfo struct {
	State    string     `json:"state" jsonschema:"CLOSED, OPEN or HALF_OPEN"`
	Failures int        `json:"failures" jsonschema:"consecutive failures"`
	RetryAt  *time.Time `json:"retry_at,omitempty" jsonschema:"when an OPEN breaker lets a probe call through"`
}

// Healthy reports whether calls can reach the server.
func (s Status) Healthy() bool { return s.State == Running || s.State == Degraded }

// CacheStats are the L1 cache's counters.
type CacheStats struct {
	Entries   int     `json:"entries"`
	MaxSize   int     `json:"max_size"`
	TTLSec    float64 `json:"ttl_seconds"`
	Hits      uint64  `json:"hits"`
	Misses    uint64  `json:"misses"`
	Evictions uint64  `json:"evictions"`
}

// Activity is one proxied call, for the dashboard's live log.
type Activity struct {
	Seq        uint64    `json:"seq" jsonschema:"increases by one with every call the gateway proxies"`
	Time       time.Time `json:"time"`
	Server     string    `json:"server"`
	Method     string    `json:"method"`
	Name       string    `json:"name,omitempty" jsonschema:"the tool, prompt or resource"`
	DurationMS float64   `json:"duration_ms"`
	Outcome    string    `json:"outcome" jsonschema:"ok, error, cached or rejected"`
	Error      string    `json:"error,omitempty"`
}

// Health is the gateway's GET /health answer.
type Health struct {
	Status  string   `json:"status" jsonschema:"ok when every enabled auto-start server is healthy, else degraded"`
	Servers []Status `json:"servers"`
	// Model and Enhancement are the other services the gateway runs
	// (prompt enhancement through the configured model); the control
	// socket, which serves the hub alone, leaves them out.
	Model       *ModelHealth `json:"model,omitempty" jsonschema:"the configured model endpoint, asked for its models"`
	Enhancement *CacheStats  `json:"enhancement_cache,omitempty" jsonschema:"POST /ollama/enhance's cache"`
}

// ModelHealth is whether the configured model endpoint answers. A model
// that is not configured is not a failure: enhancement returns prompts
// unchanged.
type ModelHealth struct {
	Configured    bool    `json:"configured"`
	Provider      string  `json:"provider,omitempty"`
	Model         string  `json:"model,omitempty"`
	URL           string  `json:"url,omitempty" jsonschema:"the endpoint, without credentials"`
	Reachable     bool    `json:"reachable"`
	LatencyMS     float64 `json:"latency_ms,omitempty"`
	Error         string  `json:"error,omitempty"`
	ErrorCategory string  `json:"error_category,omitempty"`
}

// control is servers_start, _stop and _restart: a request to the gateway.
func control(action string) op.Handler[NameInput, Status] {
	return func(ctx context.Context, env *op.Env, in NameInput) (Status, error) {
		var out Status
		err := NewControl(env.Home).Do(ctx, http.MethodPost, "/servers/"+url.PathEscape(in.Name)+"/"+action, nil, &out)
		return out, err
	}
}

// StatusInput optionally names one server.
type StatusInput struct {
	Name string `json:"name,omitempty" jsonschema:"only this server"`
}

// StatusOutput is the gateway's view of its servers and its cache.
type StatusOutput struct {
	Servers []Status   `json:"servers"`
	Cache   CacheStats `json:"cache"`
	// ConfigError is set while servers.json on disk is invalid: the
	// gateway keeps running the configuration it last loaded.
	ConfigError string `json:"config_error,omitempty" jsonschema:"why servers.json as it is on disk was not applied; the gateway keeps the configuration it last loaded"`
}

// Statuses is servers_status.
func Statuses(ctx context.Context, env *op.Env, in StatusInput) (StatusOutput, error) {
	var out StatusOutput
	if in.Name != "" {
		var s Status
		if err := NewControl(env.Home).Do(ctx, http.MethodGet, "/servers/"+url.PathEscape(in.Name), nil, &s); err != nil {
			return out, err
		}
		out.Servers = []Status{s}
		return out, NewControl(env.Home).Do(ctx, http.MethodGet, "/cache", nil, &out.Cache)
	}
	err := NewControl(env.Home).Do(ctx, http.MethodGet, "/servers", nil, &out)
	return out, err
}
