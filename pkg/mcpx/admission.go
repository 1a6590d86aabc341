package mcpx

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// MaxMessageBytes bounds one JSON-RPC message on lm mcp's stdin. An agent's
// calls are small (a tool's arguments); a line past this is answered with an
// error and skipped, without holding more than this much of it.
const MaxMessageBytes = 4 << 20

// readLine reads one line of at most limit bytes. A longer line is read to
// its end but only its first limit bytes are kept; size counts all of it.
func readLine(r *bufio.Reader, limit int) (line []byte, size int, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		size += len(chunk)
		if room := limit - len(line); room > 0 {
			line = append(line, chunk[:min(len(chunk), room)]...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, size, err
		}
	}
}

// leadingID finds a request's id in the first bytes of a message too large
// to read whole, when the id comes before the parts that were cut off (as
// every client writes it: jsonrpc, id, method, params). null otherwise.
func leadingID(prefix []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil
		}
		if key == "id" {
			return value
		}
	}
	return nil
}

// beforeInitialize is why a request read before the session was
// initialized is refused, or "" to serve it: up to protocol version
// 2025-11-25 a client initializes first (ping aside); from 2026-07-28 on,
// a request carries its protocol version in _meta and needs no handshake.
func beforeInitialize(line []byte, method string) string {
	switch mcp.MCPMethod(method) {
	case mcp.MethodInitialize, mcp.MethodPing, mcp.MethodServerDiscover:
		return ""
	}
	var msg struct {
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &msg) == nil && msg.Params.Meta[mcp.MetaKeyProtocolVersion] != nil {
		return ""
	}
	return fmt.Sprintf("%s before initialize: send initialize first (or, from protocol version 2026-07-28, give %s in the request's _meta)",
		method, mcp.MetaKeyProtocolVersion)
}

// refusal is a JSON-RPC error answer to a request lm mcp will not serve.
func refusal(id json.RawMessage, code int, message string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	out, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	return append(out, '\n')
}
