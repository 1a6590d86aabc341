package gateway_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/gateway"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/queue/pgstore"
	"lmtool.dev/lm/pkg/queue/pgstore/pgtest"
)

// lmOn runs the lm command in another process, on a LM_HOME of its own (as
// on another machine), with the queue in the database at url.
func lmOn(t *testing.T, url string, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "LM_TEST_AS_LM=1", "LM_HOME="+t.TempDir(), "LM_STORE="+url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("lm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestPageShowsChangesFromAnotherGateway: gateways A and B on two LM_HOMEs
// serve one queue database. The page on A shows, without a reload, an
// instruction added through B's API and one added with the CLI on a third
// LM_HOME, and one consumed through B.
func TestPageShowsChangesFromAnotherGateway(t *testing.T) {
	ctx := browser(t)
	url := pgtest.Own(t).URL(t)
	if _, err := pgstore.Migrate(context.Background(), url); err != nil {
		t.Fatal(err)
	}
	lmOn(t, url, "queue", "add", "Already there when the page opened")
	a := start(t, gateway.Options{Env: op.Env{Queue: url}})

	// B is a gateway process of its own.
	addrFile := filepath.Join(t.TempDir(), "addr")
	b := exec.Command(os.Args[0], "gateway", "--no-token", "--addr", "127.0.0.1:0", "--addr-file", addrFile)
	b.Env = append(os.Environ(), "LM_TEST_AS_LM=1", "LM_HOME="+t.TempDir(), "LM_STORE="+url)
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Process.Kill(); b.Wait() })
	var addr []byte
	for deadline := time.Now().Add(30 * time.Second); len(addr) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("gateway B did not start listening")
		}
		addr, _ = os.ReadFile(addrFile)
		addr = bytes.TrimSpace(addr)
	}
	onB := func(method, path, body string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+string(addr)+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s %s on gateway B: %s", method, path, resp.Status)
		}
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(a.page()), chromedp.WaitVisible("#composer-text")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#live", contains("live"), "stream")
	waitText(t, ctx, "#pending", contains("Already there when the page opened"), "the queue as it was")

	onB("POST", "/api/instructions", `{"content": "Added through gateway B"}`)
	waitText(t, ctx, "#pending", contains("Added through gateway B"), "an add on gateway B")
	lmOn(t, url, "queue", "add", "Added with the CLI elsewhere")
	waitText(t, ctx, "#pending", contains("Added with the CLI elsewhere"), "an add with the CLI on another LM_HOME")

	// An agent on B's /mcp takes the head of the queue: A's ledger shows it.
	agent := mcpClient(t, "http://"+string(addr)+"/mcp", nil)
	req := mcp.CallToolRequest{}
	req.Params.Name = "get_user_request"
	req.Params.Arguments = map[string]any{"agent_id": "agent-on-b"}
	if res, err := agent.CallTool(context.Background(), req); err != nil || res.IsError {
		t.Fatalf("get_user_request on gateway B: %v %+v", err, res)
	}
	waitText(t, ctx, "#consumed", contains("Already there when the page opened"), "a delivery through gateway B")
	waitText(t, ctx, "#agents", contains("agent-on-b"), "the agent on gateway B")
	shot(t, ctx, "page-on-a-with-changes-from-b")
}
