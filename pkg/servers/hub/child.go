package hub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"lmtool.dev/lm/pkg/guard"
	"lmtool.dev/lm/pkg/liveness"
	"lmtool.dev/lm/pkg/servers"
	"lmtool.dev/lm/pkg/servers/breaker"
)

// Supervision timings.
const (
	initTimeout         = 30 * time.Second
	downloadInitTimeout = 3 * time.Minute // npx/uvx may download first
	installingAfter     = 2 * time.Second // a slow npx start is shown as installing
	maxRestartDelay     = 30 * time.Second
	probeTimeout        = 10 * time.Second
	degradedAfter       = time.Second // a probe slower than this marks the server degraded
	listEvery           = 4           // every 4th probe is a tools/list
)

// stablePeriod is how long a server must run healthy for its crashes to
// start a new restart budget, as systemd's start-limit interval does:
// max_restarts bounds a crash loop, not a server's lifetime. Tests shorten
// it.
var stablePeriod = 10 * time.Second

// child supervises one configured server: its process (stdio) or
// connection (http), its one long-lived MCP client session, health probes,
// restarts, and its breaker and per-server MCP endpoint.
type child struct {
	name    string
	hub     *Hub
	breaker *breaker.Breaker
	own     *server.MCPServer // the /mcp/NAME endpoint's server
	logs    logBudget         // the log messages passed on to clients

	mu        sync.Mutex
	cfg       *servers.Server
	state     string
	pid       int
	startedAt time.Time
	restarts  int
	lastErr   string
	lastExit  string
	nextRetry time.Time
	latency   time.Duration
	probes    int               // bumped when a probe is sent and when it is answered, so a late timer knows
	scrub     *servers.Scrubber // hides the secrets this start resolved
	session   *client.Client
	live      *client.Client // the session whose lists may be mirrored (set under the hub's mirrorMu)
	changed   chan struct{}  // closed and replaced on every state change
	cancel    context.CancelFunc
	done      chan struct{} // closed when the supervision loop ends
	mirrored  mirrored
	// refreshing is set while a goroutine re-reads the lists after the
	// server said they changed, and refreshAgain when it said so again
	// meanwhile: one reading at a time, however often it says so.
	refreshing, refreshAgain bool
}

func newChild(h *Hub, name string, cfg *servers.Server) *child {
	c := &child{name: name, hub: h, cfg: cfg, state: servers.Stopped, changed: make(chan struct{})}
	// Called with h.mu held (or before the hub is shared).
	c.breaker = breaker.New(h.cfg.Settings.FailureThreshold(), h.cfg.Settings.RecoveryTimeout(), time.Now)
	c.own = server.NewMCPServer(name, "lm-hub",
		server.WithToolCapabilities(true), server.WithPromptCapabilities(true), server.WithResourceCapabilities(false, true))
	return c
}

// scrubber hides the secrets of the current start.
func (c *child) scrubber() *servers.Scrubber {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.scrub
}

func (c *child) config() *servers.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfg
}

// set changes the state (under c.mu) and wakes waiters and watchers.
func (c *child) setLocked(state string) {
	c.state = state
	close(c.changed)
	c.changed = make(chan struct{})
	c.hub.notifyChange()
}

func (c *child) set(state string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(state)
}

// start begins supervising, unless it already is; a start resets a
// crash loop's restart count.
func (c *child) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(c.hub.ctx)
	c.cancel, c.done, c.restarts, c.lastErr, c.nextRetry = cancel, make(chan struct{}), 0, "", time.Time{}
	c.setLocked(servers.Starting)
	done := c.done
	guard.Go(c.hub.log, "supervising server "+c.name, func() { c.supervise(ctx, done) })
}

// stop ends supervision and waits until the process is gone.
func (c *child) stop() {
	c.mu.Lock()
	cancel, done := c.cancel, c.done
	if cancel != nil && c.state != servers.Failed {
		c.setLocked(servers.Stopping)
	}
	c.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// waitSettled waits until the child is neither starting nor restarting.
func (c *child) waitSettled(ctx context.Context) string {
	for {
		c.mu.Lock()
		state, changed := c.state, c.changed
		c.mu.Unlock()
		switch state {
		case servers.Starting, servers.Installing, servers.Restarting, servers.Stopping:
		default:
			return state
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return state
		}
	}
}

func (c *child) supervise(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		c.mu.Lock()
		c.startedAt = time.Time{}
		c.mu.Unlock()
		err := c.run(ctx)
		c.mu.Lock()
		if ctx.Err() != nil {
			c.cancel = nil
			c.setLocked(servers.Stopped)
			c.mu.Unlock()
			return
		}
		if !c.startedAt.IsZero() && time.Since(c.startedAt) >= stablePeriod {
			c.restarts = 0
		}
		reason := c.scrub.Scrub(err.Error())
		c.lastErr = reason
		limit := c.cfg.RestartLimit()
		var permanent *permanentError
		if !c.cfg.Restarts() || errors.As(err, &permanent) || (limit > 0 && c.restarts >= limit) {
			if limit > 0 && c.restarts >= limit && c.cfg.Restarts() && permanent == nil {
				c.lastErr = fmt.Sprintf("crash loop: gave up after %d restarts; last: %s", c.restarts, reason)
			}
			c.cancel = nil
			c.setLocked(servers.Failed)
			c.mu.Unlock()
			c.hub.log.Warn("server failed", "server", c.name, "err", c.lastErr)
			return
		}
		c.restarts++
		delay := c.cfg.FirstRestartDelay() << (c.restarts - 1)
		if delay > maxRestartDelay || delay <= 0 {
			delay = maxRestartDelay
		}
		c.nextRetry = time.Now().Add(delay)
		c.setLocked(servers.Restarting)
		c.mu.Unlock()
		c.hub.log.Warn("server will restart", "server", c.name, "err", reason, "in", delay)
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		c.mu.Lock()
		c.nextRetry = time.Time{}
		if ctx.Err() == nil {
			c.setLocked(servers.Starting)
		}
		c.mu.Unlock()
	}
}

// permanentError is a failure a restart cannot fix (a missing variable).
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }

// run connects once and serves until the child fails or ctx ends.
func (c *child) run(ctx context.Context) (err error) {
	cfg, secrets, err := c.config().Resolved(servers.NewResolver(ctx, c.hub.home, c.hub.environ))
	if err != nil {
		return &permanentError{err}
	}
	scrub := servers.NewScrubber(secrets)
	c.mu.Lock()
	c.scrub = scrub
	c.mu.Unlock()
	var tr transport.Interface
	var proc *process
	switch cfg.Kind() {
	case servers.Stdio:
		if proc, err = spawn(c.hub.home, c.hub.environ, c.name, cfg, scrub); err != nil {
			return &permanentError{err}
		}
		defer func() {
			proc.terminate()
			c.mu.Lock()
			c.lastExit, c.pid = proc.exitText(), 0
			c.mu.Unlock()
		}()
		tr = newStdioConn(proc.stdout, proc.stdin)
		c.mu.Lock()
		c.pid = proc.cmd.Process.Pid
		c.mu.Unlock()
	case servers.HTTP:
		if tr, err = transport.NewStreamableHTTP(cfg.URL, transport.WithHTTPHeaders(cfg.Headers)); err != nil {
			return &permanentError{err}
		}
	case servers.SSE:
		if tr, err = transport.NewSSE(cfg.URL, transport.WithHeaders(cfg.Headers)); err != nil {
			return &permanentError{err}
		}
	}
	var exited <-chan struct{}
	if proc != nil {
		exited = proc.exited
	}
	// The session lives as long as ctx: a stdio session answers the
	// child's requests within the context given to Start, and its reader
	// ends with the child's output or Close.
	cl := client.NewClient(tr)
	cl.OnNotification(func(n mcp.JSONRPCNotification) { c.hub.upstreamNotification(c, n) })
	// The legacy SSE transport waits for every answer on one stream: when
	// it ends the session is over at once, and the calls waiting on it fail
	// with it rather than after their timeout.
	streamEnded := make(chan struct{})
	if cfg.Kind() == servers.SSE {
		var once sync.Once
		cl.OnConnectionLost(func(error) { once.Do(func() { close(streamEnded) }) })
	}
	if err := cl.Start(ctx); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer cl.Close()
	if err := c.initialize(ctx, cl, cfg, proc); err != nil {
		return err
	}
	c.mu.Lock()
	c.live = cl
	c.mu.Unlock()
	defer c.hub.unmirror(c)
	// Its lists are mirrored before it counts as running, so whoever waited
	// for it finds its tools.
	if err := c.hub.mirror(ctx, c, cl); err != nil {
		c.hub.log.Warn("listing the server's tools", "server", c.name, "err", err)
	}
	c.mu.Lock()
	c.session, c.startedAt = cl, time.Now()
	c.setLocked(servers.Running)
	c.mu.Unlock()
	c.hub.log.Info("server running", "server", c.name, "pid", c.pid)
	defer func() {
		c.mu.Lock()
		c.session = nil
		c.mu.Unlock()
	}()
	return c.watch(ctx, cl, cfg, proc, exited, streamEnded)
}

func (c *child) initialize(ctx context.Context, cl *client.Client, cfg *servers.Server, proc *process) error {
	timeout := initTimeout
	if cfg.Downloads() {
		timeout = downloadInitTimeout
	}
	ictx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	result := make(chan error, 1)
	go func() {
		_, err := cl.Initialize(ictx, mcp.InitializeRequest{Params: mcp.InitializeParams{
			ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
			ClientInfo:      mcp.Implementation{Name: "lm-gateway", Version: "1"},
		}})
		result <- err
	}()
	var exited <-chan struct{}
	if proc != nil {
		exited = proc.exited
	}
	slow := time.NewTimer(installingAfter)
	defer slow.Stop()
	for {
		select {
		case err := <-result:
			if err == nil {
				return nil
			}
			if proc != nil {
				select {
				case <-proc.exited:
					return c.earlyExit(proc)
				case <-time.After(100 * time.Millisecond):
				}
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("MCP handshake failed: %w%s", err, stderrSuffix(proc))
		case <-exited:
			return c.earlyExit(proc)
		case <-slow.C:
			if cfg.Downloads() {
				c.set(servers.Installing)
			}
		}
	}
}

// earlyExit describes a child that died before the handshake: almost
// always a configuration mistake, which its stderr explains.
func (c *child) earlyExit(proc *process) error {
	return fmt.Errorf("exited before the MCP handshake (%s), likely a configuration error%s", proc.exitText(), stderrSuffix(proc))
}

func stderrSuffix(proc *process) string {
	if proc == nil {
		return ""
	}
	if t := proc.stderr.tail(10); t != "" {
		return "; stderr:\n" + t
	}
	return ""
}

// watch probes the child's health until it fails or ctx ends. A probe is
// a request every protocol version answers (liveness.Probe), and every
// listEvery-th a tools/list; a slow answer marks
// the server degraded, a missing one restarts it.
func (c *child) watch(ctx context.Context, cl *client.Client, cfg *servers.Server, proc *process, exited, streamEnded <-chan struct{}) error {
	tick := time.NewTicker(cfg.HealthInterval())
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return fmt.Errorf("exited (%s)%s", proc.exitText(), stderrSuffix(proc))
		case <-streamEnded:
			return errors.New("its SSE stream ended")
		case <-tick.C:
		}
		pctx, cancel := context.WithTimeout(ctx, min(probeTimeout, cfg.CallTimeout()))
		began := time.Now()
		// A server that has not answered within degradedAfter is shown
		// degraded at once, not when the probe finally times out: a
		// frozen process (SIGSTOP, a deadlock) is no longer "running".
		c.mu.Lock()
		c.probes++
		probe := c.probes
		c.mu.Unlock()
		overdue := time.AfterFunc(degradedAfter, func() {
			c.mu.Lock()
			// A timer that fires as its probe returns must not undo the
			// state the answer set.
			if c.probes == probe && c.state == servers.Running {
				c.setLocked(servers.Degraded)
			}
			c.mu.Unlock()
		})
		err := liveness.Probe(pctx, cl)
		if err == nil && n%listEvery == 0 && cl.GetServerCapabilities().Tools != nil {
			_, err = cl.ListTools(pctx, mcp.ListToolsRequest{})
		}
		overdue.Stop()
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			select {
			case <-exited:
				return fmt.Errorf("exited (%s)%s", proc.exitText(), stderrSuffix(proc))
			default:
			}
			return fmt.Errorf("health probe failed: %w", err)
		}
		latency := time.Since(began)
		c.mu.Lock()
		c.probes++ // this probe is answered
		c.latency = latency
		if state := map[bool]string{true: servers.Degraded, false: servers.Running}[latency > degradedAfter]; state != c.state {
			c.setLocked(state)
		}
		c.mu.Unlock()
	}
}

// status is the child as servers_status reports it.
func (c *child) status() servers.Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := servers.Status{
		Name: c.name, Description: c.cfg.Description, Transport: c.cfg.Kind(), Enabled: c.cfg.IsEnabled(), AutoStart: c.cfg.AutoStart,
		State: c.state, Pid: c.pid, RestartCount: c.restarts, LastError: c.lastErr, LastExit: c.lastExit,
		Tools: len(c.mirrored.tools), Prompts: len(c.mirrored.prompts), Resources: len(c.mirrored.resources),
		Collisions: c.mirrored.collisions, Unlisted: c.mirrored.unlisted,
	}
	if !c.startedAt.IsZero() && s.Healthy() {
		t := c.startedAt.UTC()
		s.StartedAt = &t
		s.LatencyMS = float64(c.latency.Microseconds()) / 1000
	}
	if !c.nextRetry.IsZero() {
		t := c.nextRetry.UTC()
		s.NextRetryAt = &t
	}
	state, failures, retryAt := c.breaker.State()
	s.Breaker = servers.BreakerInfo{State: state, Failures: failures}
	if !retryAt.IsZero() {
		t := retryAt.UTC()
		s.Breaker.RetryAt = &t
	}
	return s
}

// sessionFor returns the live session, starting an auto-start server on
// first use and waiting for it.
func (c *child) sessionFor(ctx context.Context) (*client.Client, error) {
	c.mu.Lock()
	cl, state, cfg := c.session, c.state, c.cfg
	c.mu.Unlock()
	if cl != nil {
		return cl, nil
	}
	if state == servers.Stopped && cfg.AutoStart && cfg.IsEnabled() {
		c.start()
		state = c.waitSettled(ctx)
	} else if state == servers.Starting || state == servers.Installing {
		state = c.waitSettled(ctx)
	}
	c.mu.Lock()
	cl, lastErr := c.session, c.lastErr
	c.mu.Unlock()
	if cl != nil {
		return cl, nil
	}
	msg := fmt.Sprintf("server %s is %s", c.name, state)
	if lastErr != "" {
		msg += ": " + lastErr
	}
	return nil, errors.New(msg)
}
