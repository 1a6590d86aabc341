package mcpx

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"lmtool.dev/lm/pkg/op"
)

// rootsTimeout bounds how long a call waits for its client to list its
// roots; a client that does not answer gets the server's own.
const rootsTimeout = 5 * time.Second

// maxRememberedRoots bounds the sessions whose roots are remembered.
const maxRememberedRoots = 1000

// clientRoots follows the roots each MCP client declares (the roots
// capability): a session's list is asked for on its first call and again
// after the client says it changed (notifications/roots/list_changed).
type clientRoots struct {
	s         *server.MCPServer
	mu        sync.Mutex
	bySession map[string][]string
	// changes counts each session's list_changed notifications, so a list
	// asked for before a change is not kept after it.
	changes map[string]int
}

func followRoots(s *server.MCPServer) *clientRoots {
	c := &clientRoots{s: s, bySession: map[string][]string{}, changes: map[string]int{}}
	s.AddNotificationHandler(mcp.MethodNotificationRootsListChanged, func(ctx context.Context, _ mcp.JSONRPCNotification) {
		if session := server.ClientSessionFromContext(ctx); session != nil {
			c.mu.Lock()
			delete(c.bySession, session.SessionID())
			c.changes[session.SessionID()]++
			c.mu.Unlock()
		}
	})
	return c
}

// of returns the roots of the calling client: the directories of its file://
// roots when it declares the capability and lists any, else fallback (where
// lm started, or the person's --root). A client that reached lm over HTTP
// (the gateway records a caller on each request) is whoever holds a token,
// not the person's own host, so its roots only narrow fallback: declaring /
// must not open the file system, $LM_HOME and the person's token with it.
func (c *clientRoots) of(ctx context.Context, fallback []string) []string {
	roots := c.declared(ctx, fallback)
	if _, overHTTP := op.CallerFrom(ctx); overHTTP {
		return narrowed(roots, fallback)
	}
	return roots
}

// narrowed keeps the roots that lie within one of within; none is within.
func narrowed(roots, within []string) []string {
	var kept []string
	for _, r := range roots {
		real := realPath(r)
		for _, w := range within {
			if rel, err := filepath.Rel(realPath(w), real); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				kept = append(kept, r)
				break
			}
		}
	}
	if len(kept) == 0 {
		return within
	}
	return kept
}

// realPath is path with its symlinks resolved, or as given when it cannot
// be (it does not exist: opening under it fails later anyway).
func realPath(path string) string {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	return filepath.Clean(path)
}

// declared is what the client declares, or fallback.
func (c *clientRoots) declared(ctx context.Context, fallback []string) []string {
	session, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok || session.GetClientCapabilities().Roots == nil {
		return fallback
	}
	id := session.SessionID()
	c.mu.Lock()
	roots, known := c.bySession[id]
	generation := c.changes[id]
	c.mu.Unlock()
	if known {
		return roots
	}
	ask, cancel := context.WithTimeout(ctx, rootsTimeout)
	defer cancel()
	res, err := c.s.RequestRoots(ask, mcp.ListRootsRequest{})
	if err != nil {
		return fallback
	}
	roots = directories(res.Roots)
	if len(roots) == 0 {
		roots = fallback
	}
	c.mu.Lock()
	if len(c.bySession) >= maxRememberedRoots {
		// Ended sessions leave no trace to clean up by: forget every list
		// now and then; a live session's next call asks again.
		clear(c.bySession)
		clear(c.changes)
	}
	if c.changes[id] == generation {
		c.bySession[id] = roots
	}
	c.mu.Unlock()
	return roots
}

// directories are the local paths of file:// roots; other schemes name
// nothing lm can open.
func directories(roots []mcp.Root) []string {
	var dirs []string
	for _, r := range roots {
		u, err := url.Parse(r.URI)
		if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || !filepath.IsAbs(u.Path) {
			continue
		}
		dirs = append(dirs, filepath.Clean(u.Path))
	}
	return dirs
}
