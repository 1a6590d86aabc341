package gateway_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lmtool.dev/lm/pkg/gateway"
)

// damageRecord flips the byte after text in the store file, as a bad disk
// would: the record holding it no longer decodes.
func damageRecord(t *testing.T, path, text string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := bytes.Count(data, []byte(text))
	if n == 0 {
		t.Fatalf("%s does not hold %q", path, text)
	}
	for i := 0; ; {
		j := bytes.Index(data[i:], []byte(text))
		if j < 0 {
			break
		}
		i += j + len(text)
		data[i] = 1
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedStoreKeepsTheGatewayServing: a damaged record is a 500 with
// the error envelope, a truncated store fails the requests that read it,
// and through both the gateway keeps answering; once a sound store is back
// it serves it.
func TestDamagedStoreKeepsTheGatewayServing(t *testing.T) {
	g := start(t, gateway.Options{})
	g.lm("queue", "add", "REPRO-RECORD-CONTENT")
	g.lm("queue", "add", "intact")
	good, err := os.ReadFile(g.store)
	if err != nil {
		t.Fatal(err)
	}

	damageRecord(t, g.store, `"content":"REPRO`)
	code, body := g.do("GET", "/api/instructions", "")
	if code != 500 || body["error_category"] != "store_corrupt" || body["exit_code"] != 8.0 ||
		!strings.Contains(body["error"].(string), "in bucket queue.items is damaged") || !strings.Contains(body["suggestion"].(string), "lm store salvage") {
		t.Fatalf("list of a store with a damaged record = %d %v", code, body)
	}
	if code, body := g.do("GET", "/api/status", ""); code != 200 {
		t.Errorf("status, which reads no damaged record = %d %v", code, body)
	}

	if err := os.Truncate(g.store, 12288); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/instructions", "/api/status", "/api/history"} {
		if code, body := g.do("GET", path, ""); code < 500 || body["success"] != false {
			t.Errorf("GET %s on a truncated store = %d %v", path, code, body)
		}
	}
	if code, _ := g.do("GET", "/healthz", ""); code != 200 {
		t.Fatalf("healthz after serving a truncated store = %d", code)
	}

	if err := os.WriteFile(g.store, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(g.store + ".damaged"); err != nil {
		t.Fatalf("the truncated store was not marked damaged: %v", err)
	}
	code, body = g.do("GET", "/api/instructions", "")
	if items, _ := body["items"].([]any); code != 200 || len(items) != 2 {
		t.Fatalf("list after the store was put back = %d %v", code, body)
	}
	if code, body := g.do("POST", "/api/instructions", `{"content":"after"}`); code != 201 {
		t.Fatalf("add after the store was put back = %d %v", code, body)
	}
}

// TestDamagedRecordOverMCPIsAnErrorResult: `lm mcp` answers a call that
// meets a damaged record with an isError result carrying the envelope.
func TestDamagedRecordOverMCPIsAnErrorResult(t *testing.T) {
	g := start(t, gateway.Options{})
	g.lm("queue", "add", "REPRO-RECORD-CONTENT")
	damageRecord(t, g.store, `"content":"REPRO`)
	cmd := exec.Command(os.Args[0], "--store", g.store, "mcp")
	cmd.Env = append(os.Environ(), "LM_TEST_AS_LM=1", "LM_HOME="+filepath.Dir(g.store))
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_user_request","arguments":{"agent_id":"a"}}}
`)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("lm mcp: %v\n%s", err, out)
	}
	lines := bufio.NewScanner(bytes.NewReader(out))
	for lines.Scan() {
		if line := lines.Text(); strings.Contains(line, `"id":2`) {
			if !strings.Contains(line, `"isError":true`) || !strings.Contains(line, `store_corrupt`) || !strings.Contains(line, `bucket queue.items`) {
				t.Fatalf("get_user_request on a damaged record: %s", line)
			}
			return
		}
	}
	t.Fatalf("no answer to the call:\n%s", out)
}
