package testscripts

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"sync"
	"testing"
)

// stdioBridge serves a stdio MCP server over streamable HTTP, so suites
// that only speak HTTP can test it. It is a plain pipe: each session is one
// child started on initialize, each POSTed message is one line on the
// child's stdin, and a request's answer comes back as an SSE stream of
// everything the child writes until the response with its id. The bridge
// itself answers nothing, so what the suite sees is the child's own
// behaviour.
type stdioBridge struct {
	t       *testing.T
	command func() *exec.Cmd
	mu      sync.Mutex
	live    map[string]*bridgedChild
}

type bridgedChild struct {
	cmd     *exec.Cmd
	writing sync.Mutex // one line at a time on stdin
	stdin   io.WriteCloser
	mu      sync.Mutex
	// streams are the open POST responses, by the id of the request each
	// waits for: a response goes to its request's stream, anything else the
	// child writes to every open one.
	streams map[chan []byte]string
}

func newStdioBridge(t *testing.T, command func() *exec.Cmd) string {
	b := &stdioBridge{t: t, command: command, live: map[string]*bridgedChild{}}
	srv := httptest.NewServer(b)
	t.Cleanup(func() {
		srv.Close()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range b.live {
			c.stop()
		}
	})
	return srv.URL + "/mcp"
}

func (b *stdioBridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("Mcp-Session-Id")
	b.mu.Lock()
	child := b.live[id]
	b.mu.Unlock()
	switch r.Method {
	case http.MethodDelete:
		if child == nil {
			http.Error(w, "no such session", http.StatusNotFound)
			return
		}
		b.mu.Lock()
		delete(b.live, id)
		b.mu.Unlock()
		child.stop()
		return
	case http.MethodPost:
	default:
		// No stream outside of requests: the transport allows a server
		// to refuse GET.
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		http.Error(w, "one JSON-RPC message per POST", http.StatusBadRequest)
		return
	}
	if child == nil {
		if id != "" || msg.Method != "initialize" {
			http.Error(w, "no such session", http.StatusNotFound)
			return
		}
		if child, err = b.start(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		id = newSessionID()
		b.mu.Lock()
		b.live[id] = child
		b.mu.Unlock()
	}
	w.Header().Set("Mcp-Session-Id", id)
	if len(msg.ID) == 0 || msg.Method == "" {
		// A notification or a response to the server: nothing comes back.
		child.send(body)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	out := child.open(string(msg.ID))
	defer child.close(out)
	child.send(body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for {
		select {
		case line, ok := <-out:
			if !ok {
				return
			}
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", line)
			w.(http.Flusher).Flush()
			var reply struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(line, &reply) == nil && reply.Method == "" && bytes.Equal(reply.ID, msg.ID) {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

func (b *stdioBridge) start() (*bridgedChild, error) {
	cmd := b.command()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &bridgedChild{cmd: cmd, stdin: stdin, streams: map[chan []byte]string{}}
	go c.relay(stdout)
	return c, nil
}

// relay hands each line the child writes to the streams it belongs to.
func (c *bridgedChild) relay(stdout io.Reader) {
	scan := bufio.NewScanner(stdout)
	scan.Buffer(nil, 16<<20)
	for scan.Scan() {
		line := bytes.Clone(scan.Bytes())
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(line, &msg)
		response := msg.Method == "" && len(msg.ID) > 0
		c.mu.Lock()
		for out, id := range c.streams {
			if response && id != string(msg.ID) {
				continue
			}
			select {
			case out <- line:
			default:
			}
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	for out := range c.streams {
		close(out)
	}
	c.streams = map[chan []byte]string{}
	c.mu.Unlock()
}

func (c *bridgedChild) open(id string) chan []byte {
	out := make(chan []byte, 256)
	c.mu.Lock()
	c.streams[out] = id
	c.mu.Unlock()
	return out
}

func (c *bridgedChild) close(out chan []byte) {
	c.mu.Lock()
	delete(c.streams, out)
	c.mu.Unlock()
}

func (c *bridgedChild) send(line []byte) {
	c.writing.Lock()
	defer c.writing.Unlock()
	c.stdin.Write(append(bytes.TrimSpace(line), '\n'))
}

func (c *bridgedChild) stop() {
	c.stdin.Close()
	c.cmd.Wait()
}

func newSessionID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// tokenProxy forwards to target with the bearer token added, keeping the
// Host and Origin the client sent: suites that cannot send a header reach a
// gateway that requires one, and its Host and Origin checks still see what
// the suite sent.
func tokenProxy(t *testing.T, target, token string) string {
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(to)
			r.Out.URL.Path = r.In.URL.Path
			r.Out.Host = r.In.Host
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1,
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}
