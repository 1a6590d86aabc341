package mcpx

import (
	"container/list"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// Defaults for stateful HTTP endpoints. A session that made no request for
// DefaultSessionIdleTTL is ended; a client that comes back gets 404 and
// initializes again, as the protocol tells it to. Each session held about
// 14.5 KB of the gateway's memory when measured, so DefaultMaxSessions
// bounds what abandoned sessions can cost at about 15 MB.
const (
	DefaultSessionIdleTTL = 30 * time.Minute
	DefaultMaxSessions    = 1000
)

// Sessions is how a streamable HTTP endpoint keeps sessions.
type Sessions struct {
	// Stateful keeps sessions (Mcp-Session-Id, DELETE ends one); the
	// default is stateless.
	Stateful bool
	// IdleTTL ends a session idle for this long (DefaultSessionIdleTTL
	// when 0); stateless, it forgets what it knew of the session's client.
	IdleTTL time.Duration
	// Max is how many sessions may live at once (DefaultMaxSessions when
	// 0); a new one beyond it ends the oldest.
	Max int
}

// Server is a streamable HTTP endpoint for m that keeps sessions as s says,
// with mcp-go's further options. Each call makes a new session table, so
// every endpoint has its own.
func (s Sessions) Server(m *server.MCPServer, opts ...server.StreamableHTTPOption) *server.StreamableHTTPServer {
	ttl, max := s.IdleTTL, s.Max
	if ttl <= 0 {
		ttl = DefaultSessionIdleTTL
	}
	if !s.Stateful {
		return server.NewStreamableHTTPServer(m, append(opts, server.WithSessionIdManager(&statelessIDs{}), server.WithSessionIdleTTL(ttl))...)
	}
	if max <= 0 {
		max = DefaultMaxSessions
	}
	table := newSessionTable(max)
	endpoint := server.NewStreamableHTTPServer(m, append(opts, server.WithSessionIdManager(table), server.WithSessionIdleTTL(ttl))...)
	// A session ended to make room is ended as a client's DELETE ends it:
	// that is the one way to make the transport drop what it holds for the
	// session, so the limit bounds memory, not only the table.
	table.evicted = func(id string) { endSession(endpoint, id) }
	return endpoint
}

// endSession sends endpoint a DELETE for session id, as its client would.
func endSession(endpoint http.Handler, id string) {
	req, err := http.NewRequest(http.MethodDelete, "/mcp", nil)
	if err != nil {
		return
	}
	req.Header.Set(server.HeaderKeySessionID, id)
	endpoint.ServeHTTP(discard{header: http.Header{}}, req)
}

// discard is a response nobody reads.
type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(p []byte) (int, error) { return len(p), nil }
func (d discard) WriteHeader(int)             {}

// statelessIDs keeps no sessions, so nothing a restart would lose, yet
// hands each client a session id at initialize: it tells clients whose
// token names no agent apart (see the attribution in handler), across a
// gateway's restarts too, since any well-formed id is accepted, and so is
// none (a script's one-off call). What the transport remembers of an id
// (the client's name, for one) is dropped when it has been idle for the
// TTL.
type statelessIDs struct {
	server.StatelessGeneratingSessionIdManager
}

func (m *statelessIDs) Validate(id string) (isTerminated bool, err error) {
	if id == "" {
		return false, nil
	}
	return m.StatelessGeneratingSessionIdManager.Validate(id)
}

// sessionTable issues random session ids and remembers the live ones, at
// most max of them. It forgets an ended session at once: an unknown id and
// an ended one both get 404, so remembering ended ids would only grow.
type sessionTable struct {
	// evicted ends, in the transport, a session the table dropped to make
	// room; it runs after the table's lock is released.
	evicted func(id string)

	mu    sync.Mutex
	max   int
	order *list.List // oldest first
	live  map[string]*list.Element
}

func newSessionTable(max int) *sessionTable {
	return &sessionTable{max: max, order: list.New(), live: map[string]*list.Element{}}
}

var errUnknownSession = errors.New("unknown or expired session")

// Generate starts a session, ending the oldest one when the table is full.
func (t *sessionTable) Generate() string {
	var b [16]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	t.mu.Lock()
	var dropped []string
	for t.order.Len() >= t.max {
		oldest := t.order.Remove(t.order.Front()).(string)
		delete(t.live, oldest)
		dropped = append(dropped, oldest)
	}
	t.live[id] = t.order.PushBack(id)
	t.mu.Unlock()
	if t.evicted != nil && len(dropped) > 0 {
		// Not in the initialize request that made room: ending a
		// session takes the transport's own locks.
		go func() {
			for _, id := range dropped {
				t.evicted(id)
			}
		}()
	}
	return id
}

// Validate accepts live sessions only.
func (t *sessionTable) Validate(id string) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.live[id]; !ok {
		return false, errUnknownSession
	}
	return false, nil
}

// Terminate ends a session, by the client's DELETE or the idle sweep.
func (t *sessionTable) Terminate(id string) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.live[id]; ok {
		t.order.Remove(e)
		delete(t.live, id)
	}
	return false, nil
}
