package servers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Connect bridges a stdio MCP client (Claude Desktop launches only stdio
// servers) to a gateway's streamable HTTP endpoint: every JSON-RPC line
// read from in is POSTed to url, and every message in the answer (JSON or
// an event stream) is written to out as one line. Requests run
// concurrently, except initialize, which the rest wait for (it may set the
// session id). It returns when in ends and every answer is written.
func Connect(ctx context.Context, url, token string, in io.Reader, out io.Writer) error {
	b := &bridge{url: url, token: token, out: out}
	var wg sync.WaitGroup
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		line = bytes.Clone(line)
		var msg struct {
			Method string `json:"method"`
		}
		json.Unmarshal(line, &msg)
		if msg.Method == "initialize" {
			wg.Wait()
			b.post(ctx, line)
			continue
		}
		wg.Go(func() { b.post(ctx, line) })
	}
	wg.Wait()
	return sc.Err()
}

type bridge struct {
	url, token string
	mu         sync.Mutex
	out        io.Writer
	session    string
}

func (b *bridge) write(msg []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.out.Write(append(bytes.TrimSpace(msg), '\n'))
}

func (b *bridge) post(ctx context.Context, line []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url, bytes.NewReader(line))
	if err != nil {
		b.fail(line, err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	b.mu.Lock()
	if b.session != "" {
		req.Header.Set("Mcp-Session-Id", b.session)
	}
	b.mu.Unlock()
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.fail(line, fmt.Sprintf("cannot reach the gateway at %s: %v", b.url, err))
		return
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		b.mu.Lock()
		b.session = id
		b.mu.Unlock()
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		var data []byte
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
				data = append(data, bytes.TrimSpace(d)...)
			} else if len(sc.Bytes()) == 0 && len(data) > 0 {
				b.write(data)
				data = nil
			}
		}
		if len(data) > 0 {
			b.write(data)
		}
		return
	}
	body, _ := io.ReadAll(resp.Body)
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		if resp.StatusCode >= 300 {
			b.fail(line, "gateway answered "+resp.Status)
		}
		return
	}
	if bytes.Contains(body, []byte(`"jsonrpc"`)) {
		b.write(body)
		return
	}
	b.fail(line, fmt.Sprintf("gateway answered %s: %s", resp.Status, body))
}

// fail answers a request the gateway did not answer with a JSON-RPC error,
// so the client is never left waiting; notifications get nothing.
func (b *bridge) fail(line []byte, msg string) {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &req) != nil || len(req.ID) == 0 {
		return
	}
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32603, "message": msg}})
	b.write(data)
}
