package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"lmtool.dev/lm/pkg/agentload"
)

// Sizes of the many-agents benchmark.
var (
	agentsInstructions = envInt("LMBENCH_AGENTS_INSTRUCTIONS", 10000)
	agentsCounts       = []int{50, envInt("LMBENCH_AGENTS_MANY", 500)}
)

// agentsBench puts many agents on one gateway (pkg/agentload): each an MCP
// session on /mcp looping get_user_request, while producers add
// instructions, half by POST /api/instructions from 8 concurrent clients
// and half with `lm queue add --jsonl` in batches of 100. Every
// instruction must be delivered exactly once, or the benchmark fails.
func agentsBench(lm string) error {
	fmt.Println("## Many agents on one gateway")
	fmt.Println()
	fmt.Printf("Agents, each an MCP session on `/mcp` looping `get_user_request`, while %d instructions are added at once: half by `POST /api/instructions` "+
		"from 8 concurrent clients, half with `lm queue add --jsonl` in batches of 100. Every instruction was delivered exactly once in each run "+
		"(the benchmark fails otherwise). Latency is from just before an add is sent to the delivery that returns it; the rate is deliveries "+
		"from the first add to the last delivery; memory is the gateway's resident set.\n\n", agentsInstructions)
	fmt.Println("| agents | deliveries/s | adds/s | add → delivery p50 | p99 | max | gateway memory, peak | target |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, n := range agentsCounts {
		res, peak, err := agentsRun(lm, n)
		if err != nil && (n == agentsCounts[0] || errors.Is(err, agentload.ErrNotExactlyOnce)) {
			return fmt.Errorf("%d agents: %w", n, err)
		}
		if err != nil {
			// Past the target's size a run that could not finish is where
			// it bends: said in the table, not a failed benchmark.
			cause, _, _ := strings.Cut(err.Error(), "\n")
			fmt.Printf("| %d | did not finish: %s (%d of %d delivered, each once) | | | | | %.1f MiB | |\n", n, cause, res.Delivered, res.Added, float64(peak)/1024)
			continue
		}
		target := ""
		if n == agentsCounts[0] {
			target = "≥ 2,000/s, p99 ≤ 50 ms"
		}
		fmt.Printf("| %d | %.0f | %.0f | %s | %s | %s | %.1f MiB | %s |\n", n, float64(res.Delivered)/res.Elapsed.Seconds(),
			float64(res.Added)/res.Adding.Seconds(), ms(percentile(res.Latency, .5)), ms(percentile(res.Latency, .99)), ms(percentile(res.Latency, 1)), float64(peak)/1024, target)
	}
	dir, cleanup := home()
	defer cleanup()
	floor, err := durableCommits(filepath.Join(dir, "floor.db"), 500)
	if err != nil {
		return err
	}
	fmt.Printf("| reference: bbolt open + one-key durable commit + close, same disk, in process | %.0f /s | | | | | | |\n", floor)
	fmt.Println()
	fmt.Println("Where it bends: the gateway's writes share durable commits (the reference is one commit each), but every change " +
		"wakes every waiting get_user_request, and each wake is a claim attempt in the next shared commit: with N agents waiting, " +
		"an add costs N attempts, so the rate falls as agents are added. " +
		"One claimer per process handing instructions to its waiters in turn is what would move it.")
	fmt.Println()
	return nil
}

func agentsRun(lm string, agents int) (agentload.Result, int64, error) {
	dir, cleanup := home()
	defer cleanup()
	if out, err := command(dir, lm, "queue", "config", "default_wait_seconds=30").CombinedOutput(); err != nil {
		return agentload.Result{}, 0, fmt.Errorf("lm queue config: %v: %s", err, out)
	}
	gw, err := startServer(command(dir, lm, "gateway", "--no-token", "--addr", "127.0.0.1:0", "--addr-file", dir+"/gw.addr"), dir+"/gw.addr")
	if err != nil {
		return agentload.Result{}, 0, err
	}
	defer gw.stop()
	res, err := agentload.Run(context.Background(), agentload.Config{
		URL: gw.base, Agents: agents,
		HTTPAdds: agentsInstructions / 2, HTTPProducers: 8, CLIAdds: agentsInstructions - agentsInstructions/2, CLIBatch: 100,
		LM: lm, Env: append(os.Environ(), "LM_HOME="+dir, "LM_STORE="), Timeout: 10 * time.Minute,
	})
	_, peak := gw.memory()
	return res, peak, err
}
