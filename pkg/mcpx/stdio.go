package mcpx

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// DrainGrace is how long requests still in flight at the end of stdin may
// run before they are cancelled. A client that writes its requests and
// closes stdin still gets its answers; a wait for an instruction that nobody
// will read ends (and claims nothing).
const DrainGrace = 3 * time.Second

// ServeStdio serves s on in and out until in ends or ctx is cancelled. Only
// JSON-RPC is written to out. Work waiting in d (which may be nil) runs as
// the replies it waits for are written.
func ServeStdio(ctx context.Context, s *server.MCPServer, in io.Reader, out io.Writer, d *Deliveries) error {
	t := &tracker{pending: map[string]bool{}, idle: make(chan struct{}, 1)}
	stdio := server.NewStdioServer(s)
	reads := &resourceReads{}
	w := &responseWriter{w: out, t: t, d: d, reads: reads}
	err := stdio.Listen(ctx, &drainReader{r: bufio.NewReader(in), t: t, out: w, reads: reads}, w)
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// tracker counts requests that have been read but not yet answered.
type tracker struct {
	mu      sync.Mutex
	pending map[string]bool
	idle    chan struct{}
	// initializing is the id of an initialize request not yet answered.
	initializing string
	initialized  chan struct{}
	// started is set once the client sent initialize.
	started bool
}

// saw notes a request read from the client (request=true) or a response
// written to it.
func (t *tracker) saw(line []byte, request bool) {
	rawID, method, response, ok := peek(line)
	if !ok || len(rawID) == 0 || string(rawID) == "null" {
		return
	}
	if request && method == "" || !request && !response {
		return
	}
	id := string(rawID)
	t.mu.Lock()
	defer t.mu.Unlock()
	if request {
		t.pending[id] = true
		if method == "initialize" {
			t.initializing, t.initialized, t.started = id, make(chan struct{}), true
		}
		return
	}
	delete(t.pending, id)
	if id == t.initializing {
		close(t.initialized)
		t.initializing = ""
	}
	if len(t.pending) == 0 {
		select {
		case t.idle <- struct{}{}:
		default:
		}
	}
}

// awaitInitialize blocks while an initialize request is unanswered. mcp-go
// handles requests concurrently, so a client that pipelines its first call
// behind initialize would otherwise race the handshake (and, for one, be
// served without the client name that get_user_request uses as agent id).
func (t *tracker) awaitInitialize() {
	t.mu.Lock()
	ch := t.initialized
	pending := t.initializing != ""
	t.mu.Unlock()
	if !pending {
		return
	}
	select {
	case <-ch:
	case <-time.After(DrainGrace):
	}
}

// admit returns why a request is refused before it reaches the server,
// with its id, or "" to serve it.
func (t *tracker) admit(msg []byte) (json.RawMessage, string) {
	id, method, _, ok := peek(msg)
	if !ok || method == "" || len(id) == 0 || string(id) == "null" {
		return nil, "" // a notification, a response, or not JSON: the server's to judge
	}
	t.mu.Lock()
	started := t.started
	t.mu.Unlock()
	if started {
		return nil, ""
	}
	return id, beforeInitialize(msg, method)
}

func (t *tracker) busy() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending) > 0
}

// drainReader passes stdin through, noting requests, and holds back the end
// of input until the requests in flight are answered or DrainGrace passes.
// It answers itself, on out, the messages it will not pass on: one larger
// than MaxMessageBytes, and a request before initialize where the protocol
// requires one.
type drainReader struct {
	r     *bufio.Reader
	t     *tracker
	out   *responseWriter
	reads *resourceReads
	buf   []byte
}

func (d *drainReader) Read(p []byte) (int, error) {
	for len(d.buf) == 0 {
		d.t.awaitInitialize()
		line, size, err := readLine(d.r, MaxMessageBytes)
		if size > MaxMessageBytes {
			d.out.Write(refusal(leadingID(line), mcp.INVALID_REQUEST,
				fmt.Sprintf("the message is %d bytes; lm mcp reads messages of at most %d bytes", size, MaxMessageBytes)))
		} else if msg := bytes.TrimSpace(line); len(msg) > 0 {
			if id, why := d.t.admit(msg); why != "" {
				d.out.Write(refusal(id, mcp.INVALID_REQUEST, why))
			} else {
				d.t.saw(msg, true)
				d.reads.saw(msg)
				d.buf = line
			}
		}
		if err != nil && len(d.buf) == 0 {
			if err == io.EOF {
				d.drain()
			}
			return 0, err
		}
	}
	n := copy(p, d.buf)
	d.buf = d.buf[n:]
	return n, nil
}

func (d *drainReader) drain() {
	deadline := time.After(DrainGrace)
	for d.t.busy() {
		select {
		case <-d.t.idle:
		case <-deadline:
			return
		}
	}
}

// responseWriter passes responses through, noting which requests they
// answer, and mends the answers to reads of resources that do not exist.
type responseWriter struct {
	mu    sync.Mutex
	w     io.Writer
	t     *tracker
	d     *Deliveries
	reads *resourceReads
}

func (r *responseWriter) Write(p []byte) (int, error) {
	r.mu.Lock()
	_, err := r.w.Write(r.mendLines(p))
	r.mu.Unlock()
	n := len(p) // what the server wrote, whatever mending made of it
	if err != nil {
		n = 0
	} else {
		r.d.written(p)
	}
	for _, line := range bytes.Split(p, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			r.t.saw(line, false)
		}
	}
	return n, err
}

// mendLines mends each line of p that answers a read of a resource that
// does not exist.
func (r *responseWriter) mendLines(p []byte) []byte {
	lines := bytes.Split(p, []byte("\n"))
	changed := false
	for i, l := range lines {
		if m := r.reads.answer(l); !bytes.Equal(m, l) {
			lines[i], changed = m, true
		}
	}
	if !changed {
		return p
	}
	return bytes.Join(lines, []byte("\n"))
}
