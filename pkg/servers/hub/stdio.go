package hub

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/mcpx"
)

// stdioConn is the hub's end of a stdio child's MCP session, in place of
// mcp-go's stdio transport: one message a line each way. Each line the
// child writes is checked to be JSON once and routed by its top-level
// members (mcpx.ReadFrame), without decoding the rest: an answer goes, as
// the bytes it came as, to the call waiting for its id; notifications and
// the child's own requests are decoded for the session's client. The
// passthrough's calls (call) go out as the bytes they came as and their
// answers are never decoded here; the typed client's (SendRequest) decode
// theirs once.
//
// A child may stop reading its stdin, and a write to it then blocks until
// the session closes. So one goroutine (writeLines) writes every line, and
// a call waits for it only as long as its context lets it: a call whose
// time is up fails then, whether its line is written or not, instead of
// holding its caller (and, behind it, every later call and the health
// check's ping) until someone stops the server.
type stdioConn struct {
	in  io.WriteCloser
	out *bufio.Reader

	// lines hands a line to writeLines, which writes it whole once it has
	// taken it (a line cut short would garble the next) and reports the
	// result on the line's channel.
	lines chan outLine
	// serving bounds the child's requests being answered at once: each
	// takes a goroutine, and a child that sends them without reading the
	// answers must not make the gateway start them without end.
	serving chan struct{}
	// busy holds the lines, for writeLines, that answer the requests
	// beyond those, each line whole with its newline.
	busy chan []byte

	mu      sync.Mutex
	waiting map[string]chan []byte // the calls in progress by id (idKey), each for its answer's line

	done      chan struct{} // closed once the child's output ends or the session is closed
	closeOnce sync.Once

	// ctx is the session's, set by Start: the child's requests are
	// answered within it.
	ctx            context.Context
	onNotification atomic.Pointer[func(mcp.JSONRPCNotification)]
	onRequest      atomic.Pointer[transport.RequestHandler]
}

var _ transport.BidirectionalInterface = (*stdioConn)(nil)

// outLine is a line for the child and where its write's result goes.
type outLine struct {
	line    []byte
	written chan error // buffered: its writer may have given up
}

// maxServing is how many of the child's requests are answered at once; a
// request beyond it is answered busyCode.
const maxServing = 16

// busyCode is the JSON-RPC error (one a server defines) a request beyond
// maxServing gets.
const busyCode = -32000

// maxBusy is how many busy answers wait to be written, and maxBusyLine
// the longest one (its id is the child's): a child that asks on without
// reading its answers gets no more of them, and costs no more memory.
const (
	maxBusy     = 64
	maxBusyLine = 1 << 10
)

func newStdioConn(out io.Reader, in io.WriteCloser) *stdioConn {
	c := &stdioConn{in: in, out: bufio.NewReaderSize(out, 64<<10), waiting: map[string]chan []byte{}, done: make(chan struct{}),
		lines: make(chan outLine), serving: make(chan struct{}, maxServing), busy: make(chan []byte, maxBusy)}
	go c.writeLines()
	return c
}

// Start reads the child's output until it ends.
func (c *stdioConn) Start(ctx context.Context) error {
	c.ctx = ctx
	go c.read()
	return nil
}

// writeLines writes each line handed to it until the session is over.
func (c *stdioConn) writeLines() {
	for {
		select {
		case l := <-c.lines:
			_, err := c.in.Write(l.line)
			l.written <- err
		case line := <-c.busy:
			c.in.Write(line) // nobody waits for it: a failed write fails the next line too
		case <-c.done:
			return
		}
	}
}

func (c *stdioConn) read() {
	defer c.closeOnce.Do(func() { close(c.done) })
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			return
		}
		c.route(bytes.TrimRight(line, "\r\n"))
	}
}

// route hands one line to whoever it is for. A line that is not one JSON
// object, or an answer to no call in progress (one that gave up, or an id
// the hub never sent), is dropped, as mcp-go's transport drops them.
func (c *stdioConn) route(line []byte) {
	if !json.Valid(line) {
		return
	}
	f, ok := mcpx.ReadFrame(line)
	switch {
	case !ok:
	case f.Method != "" && f.ID == nil:
		var n mcp.JSONRPCNotification
		if handle := c.onNotification.Load(); handle != nil && json.Unmarshal(line, &n) == nil {
			(*handle)(n)
		}
	case f.Method != "":
		var req transport.JSONRPCRequest
		if json.Unmarshal(line, &req) == nil {
			c.serveRequest(req)
		}
	case f.ID != nil:
		key := idKey(f.ID)
		c.mu.Lock()
		answer, ok := c.waiting[key]
		delete(c.waiting, key)
		c.mu.Unlock()
		if ok {
			answer <- line // buffered: the caller may have given up
		}
	}
}

// serveRequest answers a request of the child's (sampling, roots, a ping)
// with the session client's handler, off the reading goroutine, unless
// maxServing are being answered already: then it is told to ask again.
func (c *stdioConn) serveRequest(req transport.JSONRPCRequest) {
	select {
	case c.serving <- struct{}{}:
	default:
		c.answerBusy(req.ID)
		return
	}
	go func() {
		defer func() { <-c.serving }()
		handle := c.onRequest.Load()
		if handle == nil {
			c.writeMessage(c.ctx, transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "No request handler configured", nil))
			return
		}
		res, err := (*handle)(c.ctx, req)
		switch {
		case err != nil:
			c.writeMessage(c.ctx, transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, err.Error(), nil))
		case res != nil:
			c.writeMessage(c.ctx, res)
		}
	}()
}

// answerBusy answers the request id with busyCode, without a goroutine
// and without waiting: the answer is dropped when maxBusy wait already,
// or when it would be longer than maxBusyLine.
func (c *stdioConn) answerBusy(id mcp.RequestId) {
	line, err := json.Marshal(transport.NewJSONRPCErrorResponse(id, busyCode,
		fmt.Sprintf("the gateway is busy: it answers %d requests of a server at once; ask again later", maxServing), nil))
	if err != nil || len(line) >= maxBusyLine {
		return
	}
	select {
	case c.busy <- append(line, '\n'):
	default:
	}
}

// idKey is the key of a request id as JSON text: the text itself in the
// usual case (a number or a string without escapes), else its canonical
// encoding, so an answer is matched whatever way the child wrote the id.
func idKey(id []byte) string {
	if writtenOneWay(id) {
		return string(id)
	}
	var v any
	if json.Unmarshal(id, &v) != nil {
		return string(id)
	}
	// Without HTML escaping: "a<b" and "a\u003cb" are one id.
	var canonical bytes.Buffer
	enc := json.NewEncoder(&canonical)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return string(id)
	}
	return string(bytes.TrimSuffix(canonical.Bytes(), []byte("\n")))
}

// writtenOneWay is an id written one way only: a string without escapes, or an
// integer.
func writtenOneWay(id []byte) bool {
	if len(id) >= 2 && id[0] == '"' {
		return bytes.IndexByte(id, '\\') < 0
	}
	digits := bytes.TrimPrefix(id, []byte("-"))
	for _, b := range digits {
		if b < '0' || b > '9' {
			return false
		}
	}
	return len(digits) > 0
}

// call writes one request line whose id is id (as JSON text) and returns
// the line that answers it. When ctx ends first the call is forgotten, and
// its answer dropped when it comes.
func (c *stdioConn) call(ctx context.Context, id []byte, line []byte) ([]byte, error) {
	key := idKey(id)
	answer := make(chan []byte, 1)
	c.mu.Lock()
	if _, taken := c.waiting[key]; taken {
		c.mu.Unlock()
		return nil, fmt.Errorf("request id %s is already in use on this session", id)
	}
	c.waiting[key] = answer
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		if c.waiting[key] == answer {
			delete(c.waiting, key)
		}
		c.mu.Unlock()
	}
	if err := c.write(ctx, line); err != nil {
		forget()
		return nil, err
	}
	select {
	case got := <-answer:
		return got, nil
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	case <-c.done:
		// An answer read just before the output ended is still this call's.
		select {
		case got := <-answer:
			return got, nil
		default:
		}
		forget()
		return nil, transport.ErrTransportClosed
	}
}

// write sends one line (its newline included) unless the session is over,
// waiting for it no longer than ctx lets it. A line taken before ctx ends
// is still written whole, after. A call that ends while its line waits is
// answered ctx's error as it stands, as one ending while its answer is
// awaited is: the caller cannot tell, nor need to, which wait it left.
func (c *stdioConn) write(ctx context.Context, line []byte) error {
	l := outLine{line: line, written: make(chan error, 1)}
	select {
	case c.lines <- l:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return transport.ErrTransportClosed
	}
	select {
	case err := <-l.written:
		if err != nil {
			return fmt.Errorf("write to the server: %w", err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return transport.ErrTransportClosed
	}
}

// writeMessage sends v as one line.
func (c *stdioConn) writeMessage(ctx context.Context, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.write(ctx, append(line, '\n'))
}

// SendRequest sends a request of the session's client and decodes its
// answer.
func (c *stdioConn) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	line, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode the request: %w", err)
	}
	id, err := json.Marshal(req.ID)
	if err != nil {
		return nil, fmt.Errorf("encode the request id: %w", err)
	}
	got, err := c.call(ctx, id, append(line, '\n'))
	if err != nil {
		return nil, err
	}
	var res transport.JSONRPCResponse
	if err := json.Unmarshal(got, &res); err != nil {
		return nil, fmt.Errorf("decode the answer: %w", err)
	}
	return &res, nil
}

// SendNotification sends a notification of the session's client.
func (c *stdioConn) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.writeMessage(ctx, n)
}

func (c *stdioConn) SetNotificationHandler(handle func(mcp.JSONRPCNotification)) {
	c.onNotification.Store(&handle)
}

func (c *stdioConn) SetRequestHandler(handle transport.RequestHandler) {
	c.onRequest.Store(&handle)
}

// Close ends the session: calls in progress fail, and the child's stdin
// closes (the process itself is the supervisor's to stop).
//
// It waits for no write: one blocked on a child that stopped reading would
// last for ever, and closing the pipe is what ends it.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.done) })
	if err := c.in.Close(); err != nil && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

func (c *stdioConn) GetSessionId() string { return "" }
