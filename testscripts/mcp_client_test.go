package testscripts

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestMCPRoundTrip drives the built lm through mcp-go's stdio client: tool
// listing, a call with structured output, progress while waiting, and a
// cancelled get_user_request that consumes nothing.
func TestMCPRoundTrip(t *testing.T) {
	home := t.TempDir()
	runLM(t, home, "", "queue", "config", "default_wait_seconds=30")
	c := startMCP(t, home, "round-trip")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
		raw, err := json.Marshal(tool)
		if err != nil {
			t.Fatalf("tool %s does not marshal: %v", tool.Name, err)
		}
		var schemas struct {
			In  struct{ Type string } `json:"inputSchema"`
			Out struct{ Type string } `json:"outputSchema"`
		}
		json.Unmarshal(raw, &schemas)
		if schemas.In.Type != "object" || schemas.Out.Type != "object" || tool.Description == "" {
			t.Errorf("tool %s: input schema %q, output schema %q, description %q", tool.Name, schemas.In.Type, schemas.Out.Type, tool.Description)
		}
	}
	for _, want := range []string{"get_user_request", "local_extract", "run_task", "servers_call"} {
		if !names[want] {
			t.Errorf("tool %s missing from the agent profile", want)
		}
	}
	if names["queue_watch"] || names["store_backup"] {
		t.Error("CLI-only operations are exposed over MCP")
	}
	if names["queue_add"] || names["queue_config"] || names["servers_add"] {
		t.Error("the person's operations are listed to an agent")
	}

	var progress atomic.Int32
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			progress.Add(1)
		}
	})
	waitCtx, stopWaiting := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "get_user_request"
		req.Params.Meta = &mcp.Meta{ProgressToken: "wait-1"}
		_, err := c.CallTool(waitCtx, req)
		errc <- err
	}()
	waitFor(t, func() bool {
		out, _ := runLM(t, home, "", "queue", "status", "-r", "--jq", `.agents[] | select(.agent_id=="round-trip") | .waiting`)
		return strings.TrimSpace(out) == "true" && progress.Load() > 0
	})
	stopWaiting()
	if err := <-errc; err == nil {
		t.Fatal("cancelled call returned no error")
	}
	// The server sees the cancellation and stops waiting; what arrives
	// afterwards stays pending.
	waitFor(t, func() bool {
		out, _ := runLM(t, home, "", "queue", "status", "-r", "--jq", `.agents[] | select(.agent_id=="round-trip") | .waiting`)
		return strings.TrimSpace(out) == "false"
	})
	runLM(t, home, "", "queue", "add", "after the cancel")
	out, _ := runLM(t, home, "", "queue", "list", "-r", "--jq", `.items[] | "\(.status) \(.content)"`)
	if out != "pending after the cancel\n" {
		t.Fatalf("after a cancelled call: %q", out)
	}

	r, err := callNext(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.ResultType != "instruction" || r.Instruction.Content != "after the cancel" {
		t.Fatalf("get_user_request = %+v", r)
	}
	out, _ = runLM(t, home, "", "queue", "list", "-r", "--jq", `.items[0].consumed_by_agent_id`)
	if out != "round-trip\n" {
		t.Errorf("agent id defaulted to %q, want the client's name", out)
	}
}
