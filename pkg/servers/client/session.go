package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/buildinfo"
	"lmtool.dev/lm/pkg/duration"
	"lmtool.dev/lm/pkg/liveness"
	"lmtool.dev/lm/pkg/op"
)

// The connection states reported on stderr.
const (
	StateConnecting   = "connecting"
	StateConnected    = "connected"
	StateDisconnected = "disconnected"
	StateError        = "error"
)

// Options tune a session. Zero values take the defaults, which
// OptionsFromEnv lets the environment override (tests shorten them).
type Options struct {
	// Backoff is the first reconnect delay; each further attempt doubles
	// it (1, 2, 4, 8, 16 s by default).
	Backoff time.Duration
	// Attempts is how many reconnects are tried before giving up.
	Attempts int
	// Heartbeat is the ping interval of long sessions.
	Heartbeat time.Duration
	// ConnectTimeout bounds one connection attempt, handshake included;
	// npx may have to download a server first.
	ConnectTimeout time.Duration
	// CallTimeout bounds each request after the handshake (a reconnect
	// included); when it passes the request fails with exit 7. Zero waits
	// as long as the server takes.
	CallTimeout time.Duration
	// Routine adds the connecting and connected lines to Status, for a
	// person who watches (a terminal, or -v); disconnections and errors
	// are always reported.
	Routine bool
	// Status receives the state lines ("lm: server X: connected").
	Status io.Writer
	// Environ is the environment a stdio server starts with, before the
	// target's own variables: the caller's (op.Env.Environ).
	Environ []string
}

// Defaults.
const (
	DefaultBackoff        = time.Second
	DefaultAttempts       = 5
	DefaultHeartbeat      = 30 * time.Second
	DefaultConnectTimeout = 60 * time.Second
)

// OptionsFromEnv reads LM_RECONNECT_BACKOFF and LM_HEARTBEAT (lm's
// durations) from the caller's environment over the defaults; status
// lines go to its stderr.
func OptionsFromEnv(env *op.Env) Options {
	o := Options{Status: env.Stderr, Environ: env.Environ, Routine: env.Verbose}
	if d, err := duration.Parse(env.Getenv("LM_RECONNECT_BACKOFF")); err == nil && d > 0 {
		o.Backoff = d
	}
	if d, err := duration.Parse(env.Getenv("LM_HEARTBEAT")); err == nil && d > 0 {
		o.Heartbeat = d
	}
	return o.withDefaults()
}

func (o Options) withDefaults() Options {
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.Attempts <= 0 {
		o.Attempts = DefaultAttempts
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.Status == nil {
		o.Status = io.Discard
	}
	return o
}

// quiet silences the transports' own logs; the session reports states.
var quiet = slog.New(slog.DiscardHandler)

// Session is a live connection to one server. Its calls reconnect an HTTP
// or SSE target whose connection dropped; a stdio child that died is
// reported, not restarted.
type Session struct {
	target Target
	opts   Options
	// life bounds the session; a stdio child is bound to it, so it must
	// outlive every call (mcp-go kills the child when Start's context ends).
	life context.Context
	stop context.CancelFunc

	// progress routes notifications/progress to the call whose token
	// they carry.
	progress sync.Map // token string → func(Progress)

	redial sync.Mutex // held while reconnecting
	mu     sync.Mutex // guards the fields below
	client *client.Client
	// dropped is closed when client's legacy SSE stream ends: a request
	// waiting for its answer on that stream fails then, not after the
	// transport's response timeout.
	dropped   chan struct{}
	init      *mcp.InitializeResult
	transport string
	child     *exec.Cmd
}

// Connect opens a session to target.
func Connect(ctx context.Context, target Target, opts Options) (*Session, error) {
	life, stop := context.WithCancel(context.WithoutCancel(ctx))
	s := &Session{target: target, opts: opts.withDefaults(), life: life, stop: stop}
	s.state(StateConnecting, "")
	if err := s.connect(ctx); err != nil {
		s.state(StateError, err.Error())
		stop()
		return nil, err
	}
	return s, nil
}

// Close ends the session and, for stdio, the child's whole process group
// (npx starts node as a grandchild).
func (s *Session) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked()
	s.stop()
}

// closeLocked drops the client. A stdio child's group gets SIGTERM at once
// rather than after mcp-go's two-second grace for a closed stdin, and
// SIGKILL once the client is closed. Errors are not reported: how a server
// we are leaving exits says nothing about the work already done.
func (s *Session) closeLocked() {
	if s.client == nil {
		return
	}
	if s.child != nil && s.child.Process != nil {
		syscall.Kill(-s.child.Process.Pid, syscall.SIGTERM)
	}
	s.client.Close()
	if s.child != nil && s.child.Process != nil {
		syscall.Kill(-s.child.Process.Pid, syscall.SIGKILL)
	}
	s.client, s.child = nil, nil
}

// Initialized is the server's answer to the handshake.
func (s *Session) Initialized() *mcp.InitializeResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.init
}

// Transport names how the session talks: stdio, streamable-http or sse.
func (s *Session) Transport() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.transport
}

func (s *Session) state(state, detail string) {
	if !s.opts.Routine && (state == StateConnecting || state == StateConnected) {
		return
	}
	line := fmt.Sprintf("lm: server %s: %s", s.target, state)
	if detail != "" {
		line += ": " + detail
	}
	fmt.Fprintln(s.opts.Status, line)
}

// connect dials the target and runs the handshake. A URL is tried as
// streamable HTTP first and as SSE if that fails for any reason other than
// the host refusing the connection or asking for credentials.
func (s *Session) connect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
	defer cancel()
	var err error
	if s.target.stdio() {
		err = s.dial(ctx, "stdio")
	} else if err = s.dial(ctx, "streamable-http"); err != nil && !refused(err) && !unauthorized(err) && ctx.Err() == nil {
		// A stream that is not MCP's would keep the SSE transport waiting
		// for an endpoint event until the timeout.
		if notMCP := webClientStream(ctx, s.target); notMCP != nil {
			return notMCP
		}
		if sseErr := s.dial(ctx, "sse"); sseErr == nil {
			err = nil
		} else {
			err = fmt.Errorf("%w (as SSE: %v)", err, sseErr)
		}
	}
	if unauthorized(err) {
		return op.Errorf(op.KindDenied, "%s refused the connection: %w", s.target, s.target.tidy(err)).WithCategory("unauthorized").
			WithHint("send the server's token with --bearer TOKEN (or $%s), or its header with --header 'NAME: VALUE'", TokenEnv)
	}
	if err != nil {
		return op.Errorf(op.KindUnavailable, "cannot connect to %s: %w", s.target, s.target.tidy(err)).
			WithHint("check that the server runs and speaks MCP; a stdio server must write only JSON-RPC on stdout")
	}
	s.state(StateConnected, fmt.Sprintf("%s %s over %s, protocol %s", s.init.ServerInfo.Name, s.init.ServerInfo.Version, s.transport, s.init.ProtocolVersion))
	return nil
}

// unauthorized reports whether the server answered 401: credentials are
// missing or wrong, which no other transport or retry fixes.
func unauthorized(err error) bool {
	return errors.Is(err, transport.ErrAuthorizationRequired) || errors.Is(err, transport.ErrUnauthorized)
}

func (s *Session) dial(ctx context.Context, kind string) error {
	var (
		t     transport.Interface
		child *exec.Cmd
		err   error
	)
	switch kind {
	case "stdio":
		t = transport.NewStdioWithOptions(s.target.Command[0], s.target.Env, s.target.Command[1:],
			transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
				child = exec.CommandContext(ctx, command, args...)
				child.Env = op.ChildEnv(s.opts.Environ, env...)
				child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				return child, nil
			}))
	case "streamable-http":
		t, err = transport.NewStreamableHTTP(s.target.URL, transport.WithHTTPHeaders(s.target.Headers), transport.WithHTTPLogger(quiet))
	case "sse":
		t, err = transport.NewSSE(s.target.URL, transport.WithHeaders(s.target.Headers), transport.WithSSELogger(quiet))
	}
	if err != nil {
		return err
	}
	c := client.NewClient(t)
	c.OnNotification(s.notified)
	dropped := make(chan struct{})
	if kind == "sse" {
		c.OnConnectionLost(func(error) { dropOnce(dropped) })
	}
	if err := c.Start(s.life); err != nil {
		c.Close()
		return s.withStderr(c, err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "lm", Version: buildinfo.Version()}
	init, err := c.Initialize(ctx, req)
	if err != nil {
		err = s.withStderr(c, err)
		c.Close()
		if child != nil && child.Process != nil {
			syscall.Kill(-child.Process.Pid, syscall.SIGKILL)
		}
		return err
	}
	s.mu.Lock()
	s.client, s.dropped, s.init, s.transport, s.child = c, dropped, init, kind, child
	s.mu.Unlock()
	return nil
}

// withStderr adds the tail of a stdio child's stderr to err: why a server
// failed to start is usually there.
func (s *Session) withStderr(c *client.Client, err error) error {
	r, ok := client.GetStderr(c)
	if !ok || r == nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _ := r.Read(buf)
	if tail := strings.TrimSpace(string(buf[:n])); tail != "" {
		return fmt.Errorf("%w; its stderr: %s", err, tail)
	}
	return err
}

// call runs fn on the live client. When the connection turns out to be
// dropped, an HTTP or SSE target is reconnected with exponential backoff and
// fn is run again if retry allows it for the error seen.
// call runs fn on the live client within the call timeout, reconnecting
// a dropped HTTP connection once when retry allows it.
func (s *Session) call(ctx context.Context, fn func(context.Context, *client.Client) error, retry func(error) bool) error {
	if s.opts.CallTimeout <= 0 {
		return s.attempt(ctx, fn, retry)
	}
	bounded, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	err := s.attempt(bounded, fn, retry)
	if err != nil && ctx.Err() == nil && errors.Is(bounded.Err(), context.DeadlineExceeded) {
		return op.Errorf(op.KindTimeout, "%s did not answer within %s", s.target, s.opts.CallTimeout).
			WithHint("wait longer with --timeout DURATION (a configured server's default is its timeout setting)")
	}
	return err
}

func (s *Session) attempt(ctx context.Context, fn func(context.Context, *client.Client) error, retry func(error) bool) error {
	c, dropped, err := s.live(ctx)
	if err != nil {
		return err
	}
	err = onStream(ctx, dropped, func(ctx context.Context) error { return fn(ctx, c) })
	if err == nil || !connectionLost(err) || ctx.Err() != nil {
		return err
	}
	s.state(StateDisconnected, tidy(err).Error())
	if s.target.stdio() {
		return op.Errorf(op.KindUnavailable, "the server %s stopped: %w", s.target, tidy(err)).
			WithHint("run the command by itself to see why it exits")
	}
	if err := s.reconnect(ctx, c); err != nil {
		return err
	}
	if !retry(err) {
		return op.Errorf(op.KindUnavailable, "the connection to %s dropped during the call, which may or may not have run: %w", s.target, tidy(err)).
			WithHint("the session is reconnected; check the server's state before running it again")
	}
	c, dropped, err = s.live(ctx)
	if err != nil {
		return err
	}
	return onStream(ctx, dropped, func(ctx context.Context) error { return fn(ctx, c) })
}

// errStreamDropped ends a request whose SSE stream ended under it.
var errStreamDropped = errors.New("the SSE stream ended")

// onStream runs fn, ending it as soon as dropped closes with a transport
// error, which the caller treats as a lost connection.
func onStream(ctx context.Context, dropped <-chan struct{}, fn func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-dropped:
			cancel(errStreamDropped)
		case <-ctx.Done():
		}
	}()
	err := fn(ctx)
	if err != nil && errors.Is(context.Cause(ctx), errStreamDropped) {
		return transport.NewError(errStreamDropped)
	}
	return err
}

// dropOnce closes ch unless it is closed; the transport reports a lost
// stream once, from its reader.
func dropOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

func (s *Session) live(ctx context.Context) (*client.Client, <-chan struct{}, error) {
	s.mu.Lock()
	c, dropped := s.client, s.dropped
	s.mu.Unlock()
	if c != nil {
		return c, dropped, nil
	}
	return nil, nil, op.Errorf(op.KindUnavailable, "not connected to %s", s.target)
}

// reconnect replaces the dropped client stale (unless another caller has
// already done so), waiting Backoff, 2×Backoff, … between attempts.
func (s *Session) reconnect(ctx context.Context, stale *client.Client) error {
	s.redial.Lock()
	defer s.redial.Unlock()
	s.mu.Lock()
	if s.client != nil && s.client != stale {
		s.mu.Unlock()
		return nil // another caller reconnected while this one waited
	}
	s.closeLocked()
	s.mu.Unlock()
	delay := s.opts.Backoff
	var last error
	for attempt := 1; attempt <= s.opts.Attempts; attempt++ {
		s.state(StateConnecting, fmt.Sprintf("attempt %d of %d in %s", attempt, s.opts.Attempts, delay))
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
		if last = s.connect(ctx); last == nil {
			return nil
		}
		s.state(StateError, last.Error())
		delay *= 2
	}
	return op.Errorf(op.KindUnavailable, "gave up reconnecting to %s after %d attempts: %w", s.target, s.opts.Attempts, errors.Unwrap(last)).
		WithHint("start the server again, then rerun the command")
}

// Heartbeat pings the server every Options.Heartbeat until ctx ends, so a
// connection that died silently is found (and reconnected) before the next
// real call needs it. It returns the error that ended the session, or nil
// when ctx ended.
func (s *Session) Heartbeat(ctx context.Context) error {
	tick := time.NewTicker(s.opts.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := s.Ping(ctx); err != nil && ctx.Err() == nil {
			return err
		}
	}
}

// Ping checks the server answers (ping, or server/discover where ping is
// gone: liveness.Probe), within the heartbeat interval.
func (s *Session) Ping(ctx context.Context) error {
	return s.call(ctx, func(ctx context.Context, c *client.Client) error {
		ctx, cancel := context.WithTimeout(ctx, s.opts.Heartbeat)
		defer cancel()
		err := liveness.Probe(ctx, c)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return transport.NewError(fmt.Errorf("no answer to ping within %s", s.opts.Heartbeat))
		}
		return err
	}, always)
}

func always(error) bool { return true }

// connectionLost tells transport failures (worth a reconnect) from the
// server's own JSON-RPC errors.
func connectionLost(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) || errors.Is(err, io.EOF) || sessionUnknown(err) ||
		strings.Contains(err.Error(), "transport closed")
}

// sessionUnknown reports a server that no longer knows our session: the
// spec's 404, or (as the TypeScript SDK answers after a restart) a 400 with
// a JSON-RPC error about the session id.
func sessionUnknown(err error) bool {
	msg := strings.ToLower(err.Error())
	return errors.Is(err, transport.ErrSessionTerminated) ||
		strings.Contains(msg, "no valid session") || strings.Contains(msg, "session not found")
}

// undelivered reports a failure that proves the request never reached the
// tool, so running it again cannot run it twice.
func undelivered(err error) bool {
	return refused(err) || sessionUnknown(err)
}

func refused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED)
}

// tidied is a transport error whose message says each step once: mcp-go
// wraps some errors twice ("failed to send request: failed to send
// request: …").
// Quoting the target's URL, it masks its credentials.
type tidied struct {
	err  error
	hide *strings.Replacer
}

func tidy(err error) error { return tidied{err, strings.NewReplacer()} }

// tidy is [tidy] for an error that may quote t's URL.
func (t Target) tidy(err error) error { return tidied{err, t.hidden()} }

func (t tidied) Error() string {
	parts := strings.Split(t.hide.Replace(t.err.Error()), ": ")
	out := parts[:1]
	for _, p := range parts[1:] {
		if p != out[len(out)-1] {
			out = append(out, p)
		}
	}
	return strings.Join(out, ": ")
}

func (t tidied) Unwrap() error { return t.err }
