package gatewayd

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"lmtool.dev/lm/pkg/cappedlog"
	"lmtool.dev/lm/pkg/duration"
	"lmtool.dev/lm/pkg/gateway/token"
	"lmtool.dev/lm/pkg/jsonio"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/table"
)

// The waits of the lifecycle commands.
const (
	startTimeout = 15 * time.Second
	stopTimeout  = 10 * time.Second
)

// Ops are `lm gateway start|stop|restart|status|logs`: the background
// gateway's lifecycle, the person's on the command line only. all lists
// every operation, against which start checks --allow before a background
// process could fail on it unseen.
func Ops(all func() []op.Operation) []op.Operation {
	start := func(ctx context.Context, env *op.Env, in ServeInput) (StartOutput, error) {
		return Start(ctx, env, in, all())
	}
	restart := func(ctx context.Context, env *op.Env, in ServeInput) (StartOutput, error) {
		return Restart(ctx, env, in, all())
	}
	return []op.Operation{
		op.New(op.Meta{
			Name: "gateway_start", Path: []string{"gateway", "start"},
			Callers: op.PersonOnly, CLIOnly: true,
			Summary:     "Start the gateway in the background (pid, address and log under LM_HOME)",
			Description: "It serves as 'lm gateway' does, with the same flags, detached, its log in $LM_HOME/gateway.log; the output carries the page's URL with the person's token.",
			Examples:    "lm gateway start\nlm gateway start --addr 127.0.0.1:0 --allow queue",
			Effect:      op.Mutating,
		}, start),
		op.New(op.Meta{
			Name: "gateway_stop", Path: []string{"gateway", "stop"},
			Callers: op.PersonOnly, CLIOnly: true,
			Summary:     "Stop the background gateway",
			Description: "SIGTERM, then SIGKILL if it is still running after 10 s. Exits 3 when none runs.",
			Effect:      op.Destructive, Idempotent: true,
		}, Stop),
		op.New(op.Meta{
			Name: "gateway_restart", Path: []string{"gateway", "restart"},
			Callers: op.PersonOnly, CLIOnly: true,
			Summary:     "Stop the background gateway if it runs, then start it again (on the same address unless --addr is given)",
			Description: "Open pages and configured agents reconnect to the same address.",
			Effect:      op.Destructive,
		}, restart),
		op.New(op.Meta{
			Name: "gateway_status", Path: []string{"gateway", "status"},
			Callers: op.PersonOnly, CLIOnly: true,
			Summary:     "Show the background gateway's pid, address, uptime, memory and log tail",
			Description: "Exits 6 when none runs, still printing the log's tail.",
			Effect:      op.ReadOnly, Idempotent: true,
		}, Status),
		op.New(op.Meta{
			Name: "gateway_logs", Path: []string{"gateway", "logs"},
			Callers: op.PersonOnly, CLIOnly: true, Stream: true,
			Summary: "Print the last N lines of the gateway log (default 40); -f follows it",
			Args:    []string{"n"},
			Aliases: map[string][]string{"follow": {"f"}},
			Effect:  op.ReadOnly, Idempotent: true,
		}, Logs),
	}
}

// ServeInput are the flags of a gateway started in the background, which
// it passes on to the serving process (`lm gateway`).
type ServeInput struct {
	Addr        string   `json:"addr,omitempty" jsonschema:"listen on HOST:PORT (port 0 picks a free one; default: $LM_GATEWAY_ADDR, else 127.0.0.1:7437)"`
	TokenFile   string   `json:"token_file,omitempty" jsonschema:"the person's bearer token is the one in this file (default: $LM_API_TOKEN, else $LM_HOME/gateway.token, made on the first start)"`
	NoToken     bool     `json:"no_token,omitempty" jsonschema:"serve without tokens (loopback only): the page's callers are the person, MCP's anonymous agents"`
	Stateful    bool     `json:"stateful,omitempty" jsonschema:"keep MCP sessions (Mcp-Session-Id); the default is stateless so agents survive a restart"`
	Root        []string `json:"root,omitempty" jsonschema:"let agents work beneath this directory (default: the directory lm starts in), unless their MCP client declares roots"`
	SessionTTL  string   `json:"session_ttl,omitempty" jsonschema:"with stateful, end a session idle this long (default: as lm gateway)"`
	MaxSessions int      `json:"max_sessions,omitempty" jsonschema:"with stateful, keep at most this many sessions per endpoint, ending the oldest (default: as lm gateway)"`
	AddrFile    string   `json:"addr_file,omitempty" jsonschema:"write the listening address to this file once serving"`
	LogLevel    string   `json:"log_level,omitempty" jsonschema:"log records of this level and above: debug, info, warn or error (default: $LM_LOG_LEVEL, else info)"`
	Allow       []string `json:"allow,omitempty" jsonschema:"let agents also call these (comma-separated or repeated): a GROUP, a TOOL, TOOL.FIELD for a person-only field, or all; see docs/callers.md"`
	AllowOrigin []string `json:"allow_origin,omitempty" jsonschema:"let pages of this origin (scheme://host[:port]) call the gateway from a browser, with CORS; they still need a token, and an EventSource a ticket from POST /api/tickets (also [gateway] allow_origins)"`
}

// StartOutput is a started gateway. Its fields are in name order, as the
// command has always printed them.
type StartOutput struct {
	Addr    string `json:"addr"`
	Log     string `json:"log"`
	Pid     int    `json:"pid"`
	Started bool   `json:"started"`
	URL     string `json:"url" jsonschema:"the page, with the person's token in the fragment"`
}

// Start launches the gateway in the background and waits until it serves.
func Start(ctx context.Context, env *op.Env, in ServeInput, ops []op.Operation) (StartOutput, error) {
	files := Files{Dir: env.Home}
	addr := in.Addr
	if addr == "" {
		addr = env.Getenv("LM_GATEWAY_ADDR")
	}
	if addr == "" {
		addr = DefaultAddr
	}
	tok, noToken, err := Auth(env, addr, in.TokenFile, in.NoToken)
	if err != nil {
		return StartOutput{}, err
	}
	// A mistyped flag fails here, not in the background process's log.
	if _, err := op.ParseGrant(in.Allow, ops); err != nil {
		return StartOutput{}, err
	}
	level := in.LogLevel
	if level == "" {
		level = env.Getenv("LM_LOG_LEVEL")
	}
	if level == "" {
		level = "info"
	}
	if _, err := LogLevel(level); err != nil {
		return StartOutput{}, err
	}
	if _, err := AllowedOrigins(files.Dir, in.AllowOrigin); err != nil {
		return StartOutput{}, err
	}
	if _, err := duration.Field("session_ttl", in.SessionTTL, 0); err != nil {
		return StartOutput{}, err
	}
	roots, err := AgentRoots(in.Root)
	if err != nil {
		return StartOutput{}, err
	}
	if !noToken && tok == "" {
		// Made here rather than by the new process, so its URL can be
		// printed: both read the same file.
		if tok, err = token.Person(files.Dir); err != nil {
			return StartOutput{}, err
		}
	}
	args := []string{"--lock-timeout", env.Store.LockTimeout.String(), "--store", env.Store.Path,
		"gateway", "--log-file", "--addr", addr}
	if in.TokenFile != "" {
		args = append(args, "--token-file", in.TokenFile)
	}
	if noToken {
		args = append(args, "--no-token")
	}
	if in.Stateful {
		args = append(args, "--stateful")
	}
	// Unset bounds are left to the serving process's defaults.
	if in.SessionTTL != "" {
		args = append(args, "--session-ttl", in.SessionTTL)
	}
	if in.MaxSessions != 0 {
		args = append(args, "--max-sessions", strconv.Itoa(in.MaxSessions))
	}
	for _, g := range in.Allow {
		args = append(args, "--allow", g)
	}
	for _, o := range in.AllowOrigin {
		args = append(args, "--allow-origin", o)
	}
	if in.AddrFile != "" {
		args = append(args, "--addr-file", in.AddrFile)
	}
	args = append(args, "--log-level", level)
	// The background gateway's agents work where it was started from.
	for _, r := range roots {
		args = append(args, "--root", r)
	}
	exe, err := os.Executable()
	if err != nil {
		return StartOutput{}, fmt.Errorf("find lm's executable: %w", err)
	}
	s, err := files.Start(ctx, exe, args, startTimeout)
	if err != nil {
		return StartOutput{}, err
	}
	return StartOutput{Started: true, Pid: s.Pid, URL: PageURL(Reachable(s.Addr), tok), Addr: s.Addr, Log: files.Log()}, nil
}

// Restart stops the background gateway if one runs and starts it again,
// on the address it had unless in names one.
func Restart(ctx context.Context, env *op.Env, in ServeInput, ops []op.Operation) (StartOutput, error) {
	stopped, err := Files{Dir: env.Home}.Stop(ctx, stopTimeout)
	if err != nil && op.KindOf(err) != op.KindNotFound {
		return StartOutput{}, err
	}
	// The restarted gateway keeps its address, so open pages and
	// configured agents reconnect to it.
	if err == nil && in.Addr == "" && env.Getenv("LM_GATEWAY_ADDR") == "" {
		in.Addr = stopped.Addr
	}
	return Start(ctx, env, in, ops)
}

// StopOutput is a stopped gateway.
type StopOutput struct {
	Addr    string `json:"addr"`
	Pid     int    `json:"pid"`
	Stopped bool   `json:"stopped"`
}

// Stop stops the background gateway.
func Stop(ctx context.Context, env *op.Env, _ struct{}) (StopOutput, error) {
	s, err := Files{Dir: env.Home}.Stop(ctx, stopTimeout)
	if err != nil {
		return StopOutput{}, err
	}
	return StopOutput{Stopped: true, Pid: s.Pid, Addr: s.Addr}, nil
}

// StatusOutput is the background gateway's state; the fields after
// running are there while it runs. They are in name order, as the command
// has always printed them.
type StatusOutput struct {
	Addr          string     `json:"addr,omitempty"`
	Log           string     `json:"log"`
	LogTail       []string   `json:"log_tail"`
	Pid           int        `json:"pid,omitempty"`
	RSSBytes      *int64     `json:"rss_bytes,omitempty" jsonschema:"resident memory (0 when unknown)"`
	Running       bool       `json:"running"`
	StartedAt     *time.Time `json:"started_at,omitempty"`
	Store         string     `json:"store,omitempty"`
	Uptime        string     `json:"uptime,omitempty"`
	UptimeSeconds *int64     `json:"uptime_seconds,omitempty"`
	URL           string     `json:"url,omitempty" jsonschema:"the page, without the token"`
}

// ExitCode is 6 (unavailable) when no gateway runs.
func (s StatusOutput) ExitCode() int {
	if s.Running {
		return 0
	}
	return op.KindUnavailable.ExitCode()
}

// Status reports on the background gateway.
func Status(_ context.Context, env *op.Env, _ struct{}) (StatusOutput, error) {
	files := Files{Dir: env.Home}
	s, running, err := files.Running()
	if err != nil {
		return StatusOutput{}, err
	}
	tail, _, _ := cappedlog.Tail(files.Log(), 10)
	out := StatusOutput{Running: running, Log: files.Log(), LogTail: tail}
	if running {
		uptime := env.Now().Sub(s.StartedAt).Round(time.Second)
		seconds, rss, started := int64(uptime.Seconds()), RSS(s.Pid), s.StartedAt
		out.Pid, out.Addr, out.URL, out.Store = s.Pid, s.Addr, s.URL, s.Store
		out.StartedAt, out.Uptime, out.UptimeSeconds, out.RSSBytes = &started, uptime.String(), &seconds, &rss
	}
	return out, nil
}

// LogsInput chooses the lines of the gateway log to print.
type LogsInput struct {
	N      string `json:"n,omitempty" jsonschema:"how many of the last lines (default 40)"`
	Tail   *int   `json:"tail,omitempty" jsonschema:"how many of the last lines (the same as N, as on jobs logs and servers logs)"`
	Follow bool   `json:"follow,omitempty" jsonschema:"keep printing lines as they are written"`
}

// Logs prints the end of the gateway log to the command line's stdout, as
// written, and with follow what is written next.
func Logs(ctx context.Context, env *op.Env, in LogsInput) (struct{}, error) {
	n := 40
	if in.Tail != nil {
		if n = *in.Tail; n < 0 {
			return struct{}{}, op.Errorf(op.KindInvalid, "--tail wants a number of lines, got %d", n)
		}
	}
	if in.N != "" {
		var err error
		if n, err = strconv.Atoi(in.N); err != nil || n < 0 {
			return struct{}{}, op.Errorf(op.KindInvalid, "N must be a number of lines, got %q", in.N)
		}
	}
	if env.Stdout == nil {
		return struct{}{}, op.Errorf(op.KindInvalid, "the gateway log is printed on lm's command line only").WithHint("run lm gateway logs")
	}
	log := Files{Dir: env.Home}.Log()
	lines, end, err := cappedlog.Tail(log, n)
	if err != nil {
		return struct{}{}, err
	}
	out := env.Stdout
	if jsonio.IsTerminal(out) {
		// The log holds what agents and servers sent (names, instructions,
		// a server's messages) as JSON, which leaves C1 and bidirectional
		// controls raw: a person's terminal is shown them escaped.
		terminal := out
		out = cappedlog.Lines(func(line string) error {
			_, err := io.WriteString(terminal, table.Printable(line)+"\n")
			return err
		})
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(out, l); err != nil {
			return struct{}{}, err
		}
	}
	if !in.Follow {
		return struct{}{}, nil
	}
	return struct{}{}, cappedlog.Follow(ctx, log, end, out)
}
