package mcpx

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// mcp-go answers every error a resource's handler returns as an internal
// error (-32603); only a URI that no resource or template matches gets
// resource-not-found. A template matches any id, so reading job://nope would
// look like lm failing rather than the client asking for nothing. The
// handler marks its not-found errors with notFoundPrefix, and the transports
// (ServeStdio, ResourceErrors) turn the answers to those reads into what the
// protocol specifies: -32002 with the URI in data (up to 2025-11-25), or
// invalid params from 2026-07-28 on, as mcp-go does for an unmatched URI.
const notFoundPrefix = "resource not found: "

// resourceNotFound is a read of a resource that does not exist.
type resourceNotFound struct {
	uri string
	err error
}

func (e resourceNotFound) Error() string { return notFoundPrefix + e.uri + ": " + e.err.Error() }
func (e resourceNotFound) Unwrap() error { return e.err }

// resourceRead is a resources/read request whose answer may need mending.
type resourceRead struct {
	uri    string
	modern bool // protocol version 2026-07-28 or later
}

// readRequest reports whether msg is a resources/read request, with its id.
func readRequest(msg []byte) (id string, read resourceRead, ok bool) {
	rawID, method, _, parsed := peek(msg)
	if !parsed || mcp.MCPMethod(method) != mcp.MethodResourcesRead || len(rawID) == 0 {
		return "", resourceRead{}, false
	}
	var req struct {
		Params struct {
			URI  string                     `json:"uri"`
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &req) != nil {
		return "", resourceRead{}, false
	}
	var version string
	json.Unmarshal(req.Params.Meta[mcp.MetaKeyProtocolVersion], &version)
	return string(rawID), resourceRead{uri: req.Params.URI, modern: mcp.IsModernProtocol(version)}, true
}

// mend rewrites resp, the answer to read, when it is mcp-go's internal
// error for a resource that does not exist; any other answer is returned
// as it is.
func (read resourceRead) mend(resp []byte) []byte {
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(resp, &msg) != nil || msg.Error == nil || msg.Error.Code != mcp.INTERNAL_ERROR ||
		!strings.HasPrefix(msg.Error.Message, notFoundPrefix) {
		return resp
	}
	code := mcp.RESOURCE_NOT_FOUND
	if read.modern {
		code = mcp.INVALID_PARAMS
	}
	type details struct {
		Code    int               `json:"code"`
		Message string            `json:"message"`
		Data    map[string]string `json:"data"`
	}
	// In the order mcp-go writes an answer's members.
	out, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   details         `json:"error"`
	}{msg.JSONRPC, msg.ID, details{code, msg.Error.Message, map[string]string{"uri": read.uri}}})
	if err != nil {
		return resp
	}
	return out
}

// resourceReads remembers the resources/read requests in flight on a
// stream transport until they are answered.
type resourceReads struct {
	mu      sync.Mutex
	pending map[string]resourceRead
}

// saw notes msg if it is a resources/read request.
func (r *resourceReads) saw(msg []byte) {
	id, read, ok := readRequest(msg)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		r.pending = map[string]resourceRead{}
	}
	r.pending[id] = read
}

// answer mends line if it answers a noted read, which it forgets.
func (r *resourceReads) answer(line []byte) []byte {
	rawID, _, response, ok := peek(line)
	if !ok || !response {
		return line
	}
	r.mu.Lock()
	read, found := r.pending[string(rawID)]
	delete(r.pending, string(rawID))
	r.mu.Unlock()
	if !found {
		return line
	}
	return read.mend(line)
}

// ResourceErrors mends the answer to a resources/read POSTed to a
// streamable HTTP endpoint (see notFoundPrefix). Other requests pass
// through untouched and unbuffered.
func ResourceErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		_, read, ok := readRequest(bytes.TrimSpace(body))
		if err != nil || !ok {
			next.ServeHTTP(w, r)
			return
		}
		rec := &bufferedResponse{header: http.Header{}}
		next.ServeHTTP(rec, r)
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		out := rec.body.Bytes()
		if strings.HasPrefix(rec.header.Get("Content-Type"), "text/event-stream") {
			out = mendEventData(out, read)
		} else {
			out = read.mend(out)
		}
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.status)
		w.Write(out)
	})
}

// mendEventData mends the data lines of an event stream.
func mendEventData(stream []byte, read resourceRead) []byte {
	lines := bytes.Split(stream, []byte("\n"))
	for i, l := range lines {
		if data, ok := bytes.CutPrefix(l, []byte("data: ")); ok {
			lines[i] = append([]byte("data: "), read.mend(data)...)
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// bufferedResponse holds a response until it has been mended.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }
func (b *bufferedResponse) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedResponse) Flush()                      {}

// errReader hands the body's read error on to the handler after the bytes
// that were read, so it judges a cut-off body as it would have.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}
