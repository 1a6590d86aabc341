package testscripts

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// mcpSession is `lm mcp` as a raw stdio peer: what a client writes goes in
// as it is, and every line it answers is read back.
type mcpSession struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	answer *bufio.Scanner
}

func startRawMCP(t *testing.T) *mcpSession {
	t.Helper()
	cmd := exec.Command("lm", "mcp")
	cmd.Env = lmEnv(t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	answer := bufio.NewScanner(stdout)
	answer.Buffer(nil, 16<<20)
	return &mcpSession{t: t, cmd: cmd, stdin: stdin, answer: answer}
}

func (s *mcpSession) send(lines ...string) {
	s.t.Helper()
	for _, line := range lines {
		if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
			s.t.Fatal(err)
		}
	}
}

// reply reads answers until the one to id.
func (s *mcpSession) reply(id int) map[string]any {
	s.t.Helper()
	for s.answer.Scan() {
		var msg map[string]any
		if err := json.Unmarshal(s.answer.Bytes(), &msg); err != nil {
			s.t.Fatalf("lm mcp wrote a line that is not JSON: %q", s.answer.Text())
		}
		if msg["id"] == float64(id) {
			return msg
		}
	}
	s.t.Fatalf("lm mcp ended without answering request %d: %v", id, s.answer.Err())
	return nil
}

// peakMemory is the most memory the process has held (VmHWM), in bytes.
func peakMemory(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestMCPRefusesOversizedMessages: a 64 MB request line is answered with a
// JSON-RPC error under its id, read without holding it whole, and the
// session goes on.
func TestMCPRefusesOversizedMessages(t *testing.T) {
	s := startRawMCP(t)
	s.send(initialize, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.reply(1)
	huge := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"queue_status","arguments":{"pad":"` +
		strings.Repeat("x", 64<<20) + `"}}}`
	s.send(huge, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"queue_status","arguments":{}}}`)
	refused := s.reply(2)
	e, _ := refused["error"].(map[string]any)
	if e == nil || e["code"] != -32600.0 || !strings.Contains(e["message"].(string), "lm mcp reads messages of at most") {
		t.Fatalf("answer to an oversized message: %v", refused)
	}
	if served := s.reply(3); served["result"] == nil {
		t.Fatalf("the call after an oversized message: %v", served)
	}
	if peak := peakMemory(t, s.cmd.Process.Pid); peak > 64<<20 {
		t.Errorf("lm mcp held %d MB at its peak reading a 64 MB line", peak>>20)
	}
}

// TestMCPRefusesRequestsBeforeInitialize: up to protocol 2025-11-25 a
// session starts with initialize; other requests before it are refused
// (ping aside), and a request of a protocol without the handshake (its
// version in _meta) is served.
func TestMCPRefusesRequestsBeforeInitialize(t *testing.T) {
	s := startRawMCP(t)
	s.send(
		`{"jsonrpc":"2.0","id":10,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"queue_status","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":12,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":13,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"modern","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`,
	)
	for _, id := range []int{10, 11} {
		answer := s.reply(id)
		e, _ := answer["error"].(map[string]any)
		if e == nil || e["code"] != -32600.0 || !strings.Contains(e["message"].(string), "before initialize: send initialize first") {
			t.Errorf("request %d before initialize: %v", id, answer)
		}
	}
	if answer := s.reply(12); answer["result"] == nil {
		t.Errorf("ping before initialize: %v", answer)
	}
	if answer := s.reply(13); answer["result"] == nil {
		t.Errorf("a 2026-07-28 request, which needs no initialize: %v", answer)
	}
	s.send(initialize, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":14,"method":"tools/list"}`)
	s.reply(1)
	if answer := s.reply(14); answer["result"] == nil {
		t.Errorf("tools/list after initialize: %v", answer)
	}
}
