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
// instruction must be delivered exactly once, or the benchmark fails. A
// last run gives the first count of agents the same instructions queued
// before they start, so the agents' own pace shows apart from the
// producers'.
func agentsBench(lm string) error {
	fmt.Println("## Many agents on one gateway")
	fmt.Println()
	fmt.Printf("Agents, each an MCP session on `/mcp` looping `get_user_request`, while %d instructions are added at once: half by `POST /api/instructions` "+
		"from 8 concurrent clients, half with `lm queue add --jsonl` in batches of 100. Every instruction was delivered exactly once in each run "+
		"(the benchmark fails otherwise). Latency is from just before an add is sent to the delivery that returns it; the rate is deliveries "+
		"from the first add to the last delivery, adds/s the producers' own pace (first add to the last add's answer); memory is the gateway's "+
		"resident set. The last row queues the instructions before the agents start, with no producers: how fast the agents take a full queue.\n\n", agentsInstructions)
	fmt.Println("| agents | deliveries/s | adds/s | add → delivery p50 | p99 | max | gateway memory, peak | target |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	var split []string
	for _, n := range agentsCounts {
		res, peak, err := agentsRun(lm, n, false)
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
		split = append(split, fmt.Sprintf("| %d | %s | %s | %s | %s |", n, ms(percentile(res.HTTPLatency, .5)), ms(percentile(res.HTTPLatency, .99)),
			ms(percentile(res.CLILatency, .5)), ms(percentile(res.CLILatency, .99))))
	}
	n := agentsCounts[0]
	res, peak, err := agentsRun(lm, n, true)
	if err != nil {
		return fmt.Errorf("%d agents, %d queued before: %w", n, agentsInstructions, err)
	}
	fmt.Printf("| %d, the %d instructions queued before they start | %.0f | – | – | – | – | %.1f MiB | |\n", n, agentsInstructions,
		float64(res.Delivered)/res.Elapsed.Seconds(), float64(peak)/1024)
	dir, cleanup := home()
	defer cleanup()
	floor, err := durableCommits(filepath.Join(dir, "floor.db"), 500)
	if err != nil {
		return err
	}
	fmt.Printf("| reference: bbolt open + one-key durable commit + close, same disk, in process | %.0f /s | | | | | | |\n", floor)
	fmt.Println()
	fmt.Println("Add → delivery by producer (a CLI batch's time includes starting `lm queue add` and taking the store's lock between the gateway's commits):")
	fmt.Println()
	fmt.Println("| agents | HTTP p50 | HTTP p99 | CLI p50 | CLI p99 |")
	fmt.Println("|---|---|---|---|---|")
	for _, row := range split {
		fmt.Println(row)
	}
	fmt.Println()
	return nil
}

// agentsRun runs agents against the producers, or with queued against
// the instructions queued before they start.
func agentsRun(lm string, agents int, queued bool) (agentload.Result, int64, error) {
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
	cfg := agentload.Config{
		URL: gw.base, Agents: agents,
		HTTPAdds: agentsInstructions / 2, HTTPProducers: 8, CLIAdds: agentsInstructions - agentsInstructions/2, CLIBatch: 100,
		LM: lm, Env: append(os.Environ(), "LM_HOME="+dir, "LM_STORE="), Timeout: 10 * time.Minute,
	}
	if queued {
		cfg.Backlog, cfg.HTTPAdds, cfg.HTTPProducers, cfg.CLIAdds = agentsInstructions, 0, 0, 0
	}
	res, err := agentload.Run(context.Background(), cfg)
	_, peak := gw.memory()
	return res, peak, err
}
