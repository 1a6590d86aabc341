// Package hub is the gateway's MCP hub: it supervises the configured
// servers (one long-lived MCP client session per child), mirrors their
// tools, prompts and resources onto a per-server endpoint and, namespaced
// as NAME__tool, onto the gateway's aggregated /mcp, and forwards calls
// through a circuit breaker and the L1 cache.
package hub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"lmtool.dev/lm/pkg/guard"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers"
	"lmtool.dev/lm/pkg/servers/cache"
)

// Options configure a hub.
type Options struct {
	// Home is LM_HOME: servers.json, the servers' logs, the node prefix.
	Home string
	// Environ is the environment the servers start with ("KEY=value"),
	// before their own variables, and that fills ${env:NAME}: the
	// gateway's, as the person started it.
	Environ []string
	// Aggregate is the gateway's /mcp server, which already serves lm's own
	// tools; the servers' tools are added beside them. The hub adds a hook
	// to it (to list the servers' resource templates).
	Aggregate *server.MCPServer
	Log       *slog.Logger
}

// Hub is safe for concurrent use.
type Hub struct {
	home      string
	environ   []string
	aggregate *server.MCPServer
	log       *slog.Logger
	ctx       context.Context
	cancel    context.CancelFunc
	cache     *cache.Cache
	activity  *activityLog
	progress  sync.Map // upstream progress token → func(params)
	tokenSeq  atomic.Uint64
	rawSeq    atomic.Uint64 // ids of the passthrough's requests to children
	mirrorMu  sync.Mutex    // serializes changes to /mcp's registrations

	reloadMu sync.Mutex // one reload at a time, from the API or the file watcher

	mu        sync.Mutex
	cfg       *servers.Config
	configErr string // why the file on disk was not applied, if it was not
	children  map[string]*child
	// watchers are woken (non-blocking) when any server's state changes.
	watchers map[chan struct{}]struct{}
}

// New builds a hub from the servers file; nothing starts until Start.
func New(opts Options) (*Hub, error) {
	cfg, err := servers.Load(opts.Home)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Hub{home: opts.Home, environ: opts.Environ, aggregate: opts.Aggregate, log: opts.Log, ctx: ctx, cancel: cancel, cfg: cfg,
		children: map[string]*child{}, watchers: map[chan struct{}]struct{}{}, activity: newActivityLog(200)}
	h.cache = cache.New(cfg.Settings.CacheSize(), cfg.Settings.TTL(), time.Now)
	for _, name := range cfg.Names() {
		h.children[name] = newChild(h, name, cfg.Servers[name])
	}
	if h.aggregate != nil {
		h.serveResources()
	}
	return h, nil
}

// Settings are the hub-wide knobs of servers.json as last loaded.
func (h *Hub) Settings() servers.Settings {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cfg.Settings
}

// Start starts the enabled auto-start servers, each on its own: a slow or
// broken one never holds up the others, and from then on follows edits to
// servers.json.
func (h *Hub) Start() {
	if err := h.watchConfig(); err != nil {
		h.log.Warn("cannot watch the servers file; edits take effect on 'lm servers reload' or a restart", "err", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, name := range h.cfg.Names() {
		if s := h.cfg.Servers[name]; s.AutoStart && s.IsEnabled() {
			h.children[name].start()
		}
	}
}

// Close stops every server, all at once, and waits until their processes
// are gone.
func (h *Hub) Close() {
	h.mu.Lock()
	children := make([]*child, 0, len(h.children))
	for _, c := range h.children {
		children = append(children, c)
	}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range children {
		wg.Go(c.stop)
	}
	wg.Wait()
	h.cancel()
}

// Reload re-reads servers.json: removed or disabled servers stop, changed
// ones restart if they were running, new auto-start ones start. An invalid
// file changes nothing; its error is kept for the status until a valid
// one is loaded.
func (h *Hub) Reload() error {
	h.reloadMu.Lock()
	defer h.reloadMu.Unlock()
	cfg, err := servers.Load(h.home)
	h.mu.Lock()
	h.configErr = ""
	if err != nil {
		h.configErr = err.Error()
	}
	h.mu.Unlock()
	if err != nil {
		h.notifyChange()
		return err
	}
	h.mu.Lock()
	old := h.children
	settingsChanged := h.cfg.Settings != cfg.Settings
	h.cfg, h.children = cfg, map[string]*child{}
	var stop, restart, start []*child
	for name, c := range old {
		s, ok := cfg.Servers[name]
		switch {
		case !ok || !s.IsEnabled():
			stop = append(stop, c)
			if ok {
				h.children[name] = c
				c.mu.Lock()
				c.cfg = s
				c.mu.Unlock()
			}
		default:
			h.children[name] = c
			c.mu.Lock()
			same := sameConfig(c.cfg, s)
			running := c.cancel != nil
			c.cfg = s
			c.mu.Unlock()
			if !same && running {
				restart = append(restart, c)
			}
		}
	}
	for _, name := range cfg.Names() {
		if _, ok := h.children[name]; !ok {
			c := newChild(h, name, cfg.Servers[name])
			h.children[name] = c
			if cfg.Servers[name].AutoStart && cfg.Servers[name].IsEnabled() {
				start = append(start, c)
			}
		}
	}
	kept := slices.Collect(maps.Values(h.children))
	h.mu.Unlock()
	if settingsChanged {
		// Hub-wide settings apply as they are saved, without a restart.
		h.cache.Resize(cfg.Settings.CacheSize(), cfg.Settings.TTL())
		for _, c := range kept {
			c.breaker.Configure(cfg.Settings.FailureThreshold(), cfg.Settings.RecoveryTimeout())
		}
		h.log.Info("servers settings applied", "settings", cfg.Settings)
	}
	for _, c := range stop {
		c.stop()
	}
	for _, c := range restart {
		c.stop()
		c.start()
	}
	for _, c := range start {
		c.start()
	}
	h.notifyChange()
	return nil
}

// sameConfig compares two entries by value: optional settings are
// pointers, and comparing their addresses made every entry with one look
// changed on each save, restarting it and killing its calls in flight.
func sameConfig(a, b *servers.Server) bool {
	return reflect.DeepEqual(*a, *b)
}

// child returns the named server, or nil.
func (h *Hub) child(name string) *child {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.children[name]
}

// Statuses lists every server's status in name order.
func (h *Hub) Statuses() []servers.Status {
	h.mu.Lock()
	names := h.cfg.Names()
	children := make([]*child, 0, len(names))
	for _, n := range names {
		children = append(children, h.children[n])
	}
	h.mu.Unlock()
	out := make([]servers.Status, 0, len(children))
	for _, c := range children {
		out = append(out, c.status())
	}
	return out
}

// StatusOutput is every server's status, the cache's counters and the
// servers file's error, if the one on disk could not be applied.
func (h *Hub) StatusOutput() servers.StatusOutput {
	out := servers.StatusOutput{Servers: h.Statuses(), Cache: h.CacheStats()}
	h.mu.Lock()
	out.ConfigError = h.configErr
	h.mu.Unlock()
	return out
}

// CacheStats are the cache's counters.
func (h *Hub) CacheStats() servers.CacheStats {
	s := h.cache.Stats()
	return servers.CacheStats{Entries: s.Entries, MaxSize: s.MaxSize, TTLSec: s.TTL.Seconds(), Hits: s.Hits, Misses: s.Misses, Evictions: s.Evictions}
}

// ClearCache empties the cache.
func (h *Hub) ClearCache() { h.cache.Clear() }

// Watch returns a channel that receives after any server's state changes,
// and a function to stop watching.
func (h *Hub) Watch() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.watchers[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.watchers, ch)
		h.mu.Unlock()
	}
}

func (h *Hub) notifyChange() {
	go func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		for ch := range h.watchers {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
}

// ErrCircuitOpen marks a call refused by an OPEN breaker.
var ErrCircuitOpen = errors.New("circuit breaker open")

// forward sends one request to a server: the cache first (when the
// request is cacheable), then the breaker, then the session, with the
// server's timeout. Failures to get an answer count against the breaker;
// an answer, even an error, counts for it.
func (h *Hub) forward(ctx context.Context, c *child, method, name string, key *cache.Key, call func(context.Context, *client.Client) (any, error)) (v any, err error) {
	began := time.Now()
	act := servers.Activity{Time: began.UTC(), Server: c.name, Method: method, Name: name, Outcome: "ok"}
	defer func() {
		act.DurationMS = float64(time.Since(began).Microseconds()) / 1000
		if err != nil && act.Outcome == "ok" {
			act.Outcome, act.Error = "error", err.Error()
		}
		// A tool that ran and reported failure is an error to whoever
		// watches, though the server answered (and the breaker counts it so).
		if text, failed := toolFailure(v); failed && act.Outcome == "ok" {
			act.Outcome, act.Error = "error", text
		}
		if act.Error != "" {
			act.Error = c.scrubber().Scrub(act.Error)
		}
		h.activity.add(act)
	}()
	if key != nil {
		if v, ok := h.cache.Get(*key); ok {
			act.Outcome = "cached"
			return v, nil
		}
	}
	if ok, retryAt := c.breaker.Allow(); !ok {
		_, failures, _ := c.breaker.State()
		act.Outcome = "rejected"
		return nil, fmt.Errorf("server %s: %w after %d consecutive failures; it will be retried at %s (in %s)",
			c.name, ErrCircuitOpen, failures, retryAt.UTC().Format(time.RFC3339), time.Until(retryAt).Round(time.Second))
	}
	cl, err := c.sessionFor(ctx)
	if err != nil {
		c.breaker.Failure()
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, c.config().CallTimeout())
	defer cancel()
	v, err = call(cctx, cl)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) || cctx.Err() != nil {
			c.breaker.Failure()
			if cctx.Err() != nil && ctx.Err() == nil {
				return nil, op.Errorf(op.KindTimeout, "server %s did not answer %s within %s", c.name, method, c.config().CallTimeout()).
					WithHint("the server's timeout setting in servers.json gives it longer")
			}
		} else {
			c.breaker.Success()
		}
		return nil, fmt.Errorf("server %s: %w", c.name, err)
	}
	c.breaker.Success()
	if key != nil {
		if r, ok := v.(*mcp.CallToolResult); !ok || !r.IsError {
			h.cache.Put(*key, v)
		}
	}
	return v, nil
}

// toolFailure says whether a forwarded call's value is a tool's failure,
// and what it said.
func toolFailure(v any) (string, bool) {
	switch r := v.(type) {
	case *mcp.CallToolResult:
		if r.IsError {
			return toolErrorText(r), true
		}
	case rawResult:
		return r.toolError()
	}
	return "", false
}

// toolErrorText is what a failed tool said, for the activity log.
func toolErrorText(r *mcp.CallToolResult) string {
	for _, c := range r.Content {
		if t, ok := c.(mcp.TextContent); ok {
			return t.Text
		}
	}
	return "the tool reported an error"
}

// upstreamNotification relays what a child sends: list changes refresh
// the mirror (and invalidate the cache), resource updates invalidate the
// cached read and are passed on, progress goes to the one downstream
// request it belongs to, log messages to every client (as many as its
// logBudget lets through).
func (h *Hub) upstreamNotification(c *child, n mcp.JSONRPCNotification) {
	params := n.Params.AdditionalFields
	switch n.Method {
	case mcp.MethodNotificationToolsListChanged, mcp.MethodNotificationPromptsListChanged, mcp.MethodNotificationResourcesListChanged:
		switch n.Method {
		case mcp.MethodNotificationToolsListChanged:
			h.cache.Invalidate(c.name, "tools/call", "")
		case mcp.MethodNotificationResourcesListChanged:
			h.cache.Invalidate(c.name, "resources/read", "")
		}
		h.refreshLists(c)
	case mcp.MethodNotificationResourceUpdated:
		uri, _ := params["uri"].(string)
		h.cache.Invalidate(c.name, "resources/read", uri)
		c.own.SendNotificationToAllClients(n.Method, params)
		if h.aggregate != nil {
			h.aggregate.SendNotificationToAllClients(n.Method, namespacedUpdate(c.name, params))
		}
	case "notifications/progress":
		if relay, ok := h.progress.Load(fmt.Sprint(params["progressToken"])); ok {
			relay.(func(map[string]any))(params)
		}
	case "notifications/message":
		if ok, dropped := c.logs.take(time.Now()); !ok {
			if dropped > 0 {
				h.log.Warn("server logs faster than its messages are passed on: some dropped", "server", c.name, "dropped", dropped,
					"passed", fmt.Sprintf("%d at once, then %d a second", logBurst, logsPerSecond))
			}
			return
		}
		c.own.SendNotificationToAllClients(n.Method, params)
		if h.aggregate != nil {
			logged := map[string]any{}
			for k, v := range params {
				logged[k] = v
			}
			logged["logger"] = c.name
			h.aggregate.SendNotificationToAllClients(n.Method, logged)
		}
	}
}

// refreshLists mirrors c's lists again, off the reading goroutine. A
// server may say its lists changed without end: that costs one reading at
// a time, and what it says during one makes one more, not one each.
func (h *Hub) refreshLists(c *child) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refreshing {
		c.refreshAgain = true
		return
	}
	first := c.session
	if first == nil {
		return
	}
	c.refreshing = true
	guard.Go(h.log, "refreshing the lists of server "+c.name, func() {
		finished := false
		defer func() {
			if !finished { // a panic: the next change starts a reading again
				c.mu.Lock()
				c.refreshing, c.refreshAgain = false, false
				c.mu.Unlock()
			}
		}()
		for cl := first; cl != nil; cl = h.nextRefresh(c) {
			if err := h.mirror(h.ctx, c, cl); err != nil {
				h.log.Warn("refreshing the server's lists", "server", c.name, "err", err)
			}
		}
		finished = true
	})
}

// nextRefresh is the session to read c's lists from again, or nil when no
// change came during the last reading (or the session ended), which ends
// the refresh.
func (h *Hub) nextRefresh(c *child) *client.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.refreshAgain || c.session == nil {
		c.refreshing, c.refreshAgain = false, false
		return nil
	}
	c.refreshAgain = false
	return c.session
}

// Activity returns the recent proxied calls (oldest first) and a channel
// woken when another is recorded.
func (h *Hub) Activity() ([]servers.Activity, <-chan struct{}) { return h.activity.recent() }

// activityLog keeps the last max proxied calls in a ring, numbered so a
// reader can tell which it has already seen. Recording a call is on every
// proxied call's path: it copies one entry and allocates nothing unless a
// reader is waiting.
type activityLog struct {
	mu    sync.Mutex
	seq   uint64
	ring  []servers.Activity // len ≤ cap; once full, next is the oldest
	next  int
	waker chan struct{} // handed to readers; closed by the next add
}

func newActivityLog(max int) *activityLog {
	return &activityLog{ring: make([]servers.Activity, 0, max)}
}

func (l *activityLog) add(a servers.Activity) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	a.Seq = l.seq
	if len(l.ring) < cap(l.ring) {
		l.ring = append(l.ring, a)
	} else {
		l.ring[l.next] = a
		l.next = (l.next + 1) % len(l.ring)
	}
	if l.waker != nil {
		close(l.waker)
		l.waker = nil
	}
}

func (l *activityLog) recent() ([]servers.Activity, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.waker == nil {
		l.waker = make(chan struct{})
	}
	return append(slices.Clone(l.ring[l.next:]), l.ring[:l.next]...), l.waker
}

// since returns the calls numbered after seq.
func since(items []servers.Activity, seq uint64) []servers.Activity {
	i, _ := slices.BinarySearchFunc(items, seq+1, func(a servers.Activity, s uint64) int { return cmp.Compare(a.Seq, s) })
	return items[i:]
}
