package gateway

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"lmtool.dev/lm/pkg/op"
)

// A browser's EventSource cannot send an Authorization header, and a token
// in a URL ends up in history, logs and Referer headers. So a client that
// holds a token trades it (POST /api/tickets) for a ticket: random, good
// for one stream opened within ticketTTL, and carrying the caller who
// asked for it — never more. The stream routes (streamRoutes) take it as
// ?ticket=; no other route does.
const (
	ticketTTL = 30 * time.Second
	// maxTickets bounds what unredeemed tickets can cost; beyond it the
	// one closest to expiring goes first.
	maxTickets = 1024
)

// streamRoutes are the event streams a ticket opens.
var streamRoutes = map[string]bool{"/sse": true, "/api/events": true, "/servers/events": true}

// tickets are the tickets issued and not yet redeemed, by the digest of
// their text: a lookup's timing tells nothing about a ticket's characters.
type tickets struct {
	mu       sync.Mutex
	byDigest map[[sha256.Size]byte]ticket
	now      func() time.Time
}

type ticket struct {
	caller  op.Caller
	expires time.Time
}

func newTickets() *tickets {
	return &tickets{byDigest: map[[sha256.Size]byte]ticket{}, now: time.Now}
}

// issue makes a ticket for caller.
func (t *tickets) issue(caller op.Caller) (string, time.Time) {
	var b [32]byte
	rand.Read(b[:])
	text := "lmt_" + hex.EncodeToString(b[:])
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for d, tk := range t.byDigest {
		if !now.Before(tk.expires) {
			delete(t.byDigest, d)
		}
	}
	for len(t.byDigest) >= maxTickets {
		var oldest [sha256.Size]byte
		first := true
		for d, tk := range t.byDigest {
			if first || tk.expires.Before(t.byDigest[oldest].expires) {
				oldest, first = d, false
			}
		}
		delete(t.byDigest, oldest)
	}
	expires := now.Add(ticketTTL)
	t.byDigest[sha256.Sum256([]byte(text))] = ticket{caller: caller, expires: expires}
	return text, expires
}

// redeem spends a ticket: its caller, once, while it has not expired.
func (t *tickets) redeem(text string) (op.Caller, bool) {
	d := sha256.Sum256([]byte(text))
	t.mu.Lock()
	defer t.mu.Unlock()
	tk, ok := t.byDigest[d]
	delete(t.byDigest, d)
	if !ok || !t.now().Before(tk.expires) {
		return op.Caller{}, false
	}
	return tk.caller, true
}

// issueTicket is POST /api/tickets.
func (s *Server) issueTicket(w http.ResponseWriter, r *http.Request) {
	if s.opts.NoToken {
		// Without tokens a stream needs no ticket, and one made on the
		// page's routes (where callers are the person) would carry the
		// person's standing to /sse, whose callers are anonymous agents.
		writeError(w, http.StatusConflict, op.Errorf(op.KindConflict, "this gateway runs without tokens (--no-token): there is nothing to trade for a ticket").
			WithCategory("no_token").WithHint("open the stream without a ticket"))
		return
	}
	caller, _ := op.CallerFrom(r.Context())
	text, expires := s.tickets.issue(caller)
	writeJSON(w, http.StatusCreated, map[string]any{"ticket": text, "expires_at": expires.UTC().Format(time.RFC3339Nano)})
}

// takeTicket removes ?ticket= from a request to a stream route, so that
// nothing after this point (a log line, a handler reading the query) sees
// it, and redeems it.
func (s *Server) takeTicket(r *http.Request) (op.Caller, bool) {
	if r.Method != http.MethodGet || !streamRoutes[r.URL.Path] {
		return op.Caller{}, false
	}
	q := r.URL.Query()
	text := q.Get("ticket")
	if text == "" {
		return op.Caller{}, false
	}
	q.Del("ticket")
	r.URL.RawQuery = q.Encode()
	r.RequestURI = r.URL.RequestURI()
	return s.tickets.redeem(text)
}
