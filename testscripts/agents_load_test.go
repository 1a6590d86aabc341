package testscripts

import (
	"context"
	"strings"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/agentload"
)

// TestManyAgentsExactlyOnce puts 20 agents, each an MCP session on the
// gateway's /mcp looping get_user_request, against producers adding 500
// instructions over HTTP and with `lm queue add --jsonl` at once: every
// instruction is delivered exactly once, and the store agrees.
func TestManyAgentsExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("many processes and sessions: not in -short")
	}
	home := t.TempDir()
	runLM(t, home, "", "queue", "config", "default_wait_seconds=5")
	_, url, _ := idleGateway(t, home, "--no-token")
	res, err := agentload.Run(context.Background(), agentload.Config{
		URL: url, Agents: 20,
		HTTPAdds: 250, HTTPProducers: 4, CLIAdds: 250, CLIBatch: 25,
		LM: "lm", Env: lmEnv(home), Timeout: 3 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Added != 500 || res.Delivered != 500 || len(res.Latency) != 500 {
		t.Errorf("added %d, delivered %d, timed %d; want 500 each", res.Added, res.Delivered, len(res.Latency))
	}
	out, _ := runLM(t, home, "", "queue", "status", "-r", "--jq", `"\(.queue.pending_count) \(.queue.consumed_count)"`)
	if strings.TrimSpace(out) != "0 500" {
		t.Errorf("the store counts %q pending and consumed, want 0 500", out)
	}
}
