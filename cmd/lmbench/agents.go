package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
		"resident set and gateway CPU its user and system time over the run, per delivery. The row before the reference queues the instructions before the agents start, with no producers: how fast the agents take a full queue.\n\n", agentsInstructions)
	fmt.Println("| agents | deliveries/s | adds/s | add → delivery p50 | p99 | max | gateway memory, peak | gateway CPU per delivery | target |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	var split, cores []string
	for _, n := range agentsCounts {
		res, gw, err := agentsRun(lm, n, httpAndCLI)
		if err != nil && (n == agentsCounts[0] || errors.Is(err, agentload.ErrNotExactlyOnce)) {
			return fmt.Errorf("%d agents: %w", n, err)
		}
		if err != nil {
			// Past the target's size a run that could not finish is where
			// it bends: said in the table, not a failed benchmark.
			cause, _, _ := strings.Cut(err.Error(), "\n")
			fmt.Printf("| %d | did not finish: %s (%d of %d delivered, each once) | | | | | %.1f MiB | | |\n", n, cause, res.Delivered, res.Added, gw.peakMiB())
			continue
		}
		target := ""
		if n == agentsCounts[0] {
			target = "≥ 2,000/s, p99 ≤ 50 ms"
		}
		fmt.Printf("| %d | %.0f | %.0f | %s | %s | %s | %.1f MiB | %s | %s |\n", n, float64(res.Delivered)/res.Elapsed.Seconds(),
			float64(res.Added)/res.Adding.Seconds(), ms(percentile(res.Latency, .5)), ms(percentile(res.Latency, .99)), ms(percentile(res.Latency, 1)),
			gw.peakMiB(), gw.perDelivery(res), target)
		split = append(split, fmt.Sprintf("| %d | %s | %s | %s | %s |", n, ms(percentile(res.HTTPLatency, .5)), ms(percentile(res.HTTPLatency, .99)),
			ms(percentile(res.CLILatency, .5)), ms(percentile(res.CLILatency, .99))))
		cores = append(cores, gw.cores(fmt.Sprintf("%d agents, HTTP and CLI", n), res))
	}
	n := agentsCounts[0]
	res, gw, err := agentsRun(lm, n, httpOnly)
	if err != nil {
		return fmt.Errorf("%d agents, %d added over HTTP: %w", n, agentsInstructions, err)
	}
	fmt.Printf("| %d, the %d instructions all added over HTTP (8 clients) | %.0f | %.0f | %s | %s | %s | %.1f MiB | %s | |\n", n, agentsInstructions,
		float64(res.Delivered)/res.Elapsed.Seconds(), float64(res.Added)/res.Adding.Seconds(),
		ms(percentile(res.Latency, .5)), ms(percentile(res.Latency, .99)), ms(percentile(res.Latency, 1)), gw.peakMiB(), gw.perDelivery(res))
	cores = append(cores, gw.cores(fmt.Sprintf("%d agents, HTTP only", n), res))
	res, gw, err = agentsRun(lm, n, queuedBefore)
	if err != nil {
		return fmt.Errorf("%d agents, %d queued before: %w", n, agentsInstructions, err)
	}
	fmt.Printf("| %d, the %d instructions queued before they start | %.0f | – | – | – | – | %.1f MiB | %s | |\n", n, agentsInstructions,
		float64(res.Delivered)/res.Elapsed.Seconds(), gw.peakMiB(), gw.perDelivery(res))
	cores = append(cores, gw.cores(fmt.Sprintf("%d agents, queued before", n), res))
	dir, cleanup := home()
	defer cleanup()
	floor, err := durableCommits(filepath.Join(dir, "floor.db"), 500)
	if err != nil {
		return err
	}
	fmt.Printf("| reference: bbolt open + one-key durable commit + close, same disk, in process | %.0f /s | | | | | | | |\n", floor)
	batch, err := cliBatch(lm, 21)
	if err != nil {
		return err
	}
	fmt.Printf("| reference: one `lm queue add --jsonl` of 100 into an idle store, start to exit (median of 21) | | | %s | | | | | |\n", ms(batch))
	fmt.Println()
	fmt.Println("Add → delivery by producer (a CLI batch's time includes starting `lm queue add` and taking the store's lock between the gateway's commits):")
	fmt.Println()
	fmt.Println("| agents | HTTP p50 | HTTP p99 | CLI p50 | CLI p99 |")
	fmt.Println("|---|---|---|---|---|")
	for _, row := range split {
		fmt.Println(row)
	}
	fmt.Println()
	fmt.Println("Where the CPU went, in seconds per 1,000 instructions delivered (the load generator is this benchmark's own process: the agents' MCP clients and the HTTP producers), and the cores busy over the run:")
	fmt.Println()
	fmt.Println("| run | gateway | load generator | `lm queue add` processes | cores busy |")
	fmt.Println("|---|---|---|---|---|")
	for _, row := range cores {
		fmt.Println(row)
	}
	fmt.Println()
	fmt.Println("Where the time goes: a waiting call's answer comes from its process's claimer, whose pass over every call waiting " +
		"(oldest first) runs last in each transaction the gateway commits, so an instruction added over HTTP is handed out in the " +
		"commit that stores it, and an add costs one claim however many agents wait; a call that comes, or an add by another " +
		"process, has the claimer make a transaction for it. The gateway's CPU per delivery (the MCP call, the claim, the HTTP add) " +
		"is a small part of a delivery's time: calls wait on durable commits, and a pass hands out as many instructions as it finds " +
		"calls waiting, so the agents' pace is the calls waiting per commit over the time of a commit; the queued-before row measures " +
		"it without producers. Each `lm queue add` takes the store's lock between the gateway's commits, and its start costs CPU the " +
		"two cores share: when the agents take fewer per commit than the producers add, a backlog grows until the adds stop, and " +
		"the tail is the wait in it.")
	fmt.Println()
	return nil
}

// gatewayRun is what a run's gateway used, and the CPU time the rest of
// the run took on the same cores.
type gatewayRun struct {
	peak int64         // resident set, peak, KiB
	cpu  time.Duration // user and system time
	// load is the load generator's time (the agents' MCP clients, the
	// HTTP producers), cli the lm queue add processes', wall the run's.
	load, cli, wall time.Duration
}

// cores is a row of where the CPU went in a run: seconds per 1,000
// instructions, and cores busy over the run.
func (g gatewayRun) cores(name string, res agentload.Result) string {
	per := func(d time.Duration) string {
		return fmt.Sprintf("%.2f s", d.Seconds()*1000/float64(max(res.Delivered, 1)))
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %.2f of %d |", name, per(g.cpu), per(g.load), per(g.cli),
		(g.cpu+g.load+g.cli).Seconds()/g.wall.Seconds(), runtime.NumCPU())
}

func (g gatewayRun) peakMiB() float64 { return float64(g.peak) / 1024 }

func (g gatewayRun) perDelivery(res agentload.Result) string {
	if res.Delivered == 0 {
		return "–"
	}
	return ms(g.cpu / time.Duration(res.Delivered))
}

// cpuTime is the user and system time process pid has used, from
// /proc/PID/stat (in clock ticks, 100 a second on Linux).
func cpuTime(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which may hold spaces, start
	// with the state (field 3); utime and stime are fields 14 and 15.
	i := bytes.LastIndex(data, []byte(") "))
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(data[i+2:]))
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100
}

// How a run's instructions come.
type mix int

const (
	httpAndCLI   mix = iota // half over HTTP, half with lm queue add, at once
	httpOnly                // all over HTTP
	queuedBefore            // all queued before the agents start
)

// agentsRun runs agents against the instructions as m brings them.
func agentsRun(lm string, agents int, m mix) (agentload.Result, gatewayRun, error) {
	dir, cleanup := home()
	defer cleanup()
	if out, err := command(dir, lm, "queue", "config", "default_wait_seconds=30").CombinedOutput(); err != nil {
		return agentload.Result{}, gatewayRun{}, fmt.Errorf("lm queue config: %v: %s", err, out)
	}
	gw, err := startServer(command(dir, lm, "gateway", "--no-token", "--addr", "127.0.0.1:0", "--addr-file", dir+"/gw.addr"), dir+"/gw.addr")
	if err != nil {
		return agentload.Result{}, gatewayRun{}, err
	}
	defer gw.stop()
	cfg := agentload.Config{
		URL: gw.base, Agents: agents,
		HTTPAdds: agentsInstructions / 2, HTTPProducers: 8, CLIAdds: agentsInstructions - agentsInstructions/2, CLIBatch: 100,
		LM: lm, Env: append(os.Environ(), "LM_HOME="+dir, "LM_STORE="), Timeout: 10 * time.Minute,
	}
	switch m {
	case httpOnly:
		cfg.HTTPAdds, cfg.CLIAdds = agentsInstructions, 0
	case queuedBefore:
		cfg.Backlog, cfg.HTTPAdds, cfg.HTTPProducers, cfg.CLIAdds = agentsInstructions, 0, 0, 0
	}
	// The gateway is a child still running, so the children's time is
	// that of the lm queue add processes the run waited for.
	selfBefore, childrenBefore := rusage(syscall.RUSAGE_SELF), rusage(syscall.RUSAGE_CHILDREN)
	started := time.Now()
	res, err := agentload.Run(context.Background(), cfg)
	run := gatewayRun{cpu: cpuTime(gw.cmd.Process.Pid), wall: time.Since(started),
		load: rusage(syscall.RUSAGE_SELF) - selfBefore, cli: rusage(syscall.RUSAGE_CHILDREN) - childrenBefore}
	_, run.peak = gw.memory()
	return res, run, err
}

// rusage is the user and system time of who (this process, or its
// children waited for).
func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(who, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cliBatch is the median time of runs `lm queue add --jsonl` adding 100
// instructions to a store no other process uses: the least a CLI batch's
// add → delivery can take, before any agent takes it.
func cliBatch(lm string, runs int) (time.Duration, error) {
	dir, cleanup := home()
	defer cleanup()
	var lines strings.Builder
	for i := range 100 {
		fmt.Fprintf(&lines, "\"reference-%d\"\n", i)
	}
	times := make([]time.Duration, runs)
	for i := range times {
		cmd := command(dir, lm, "queue", "add", "--jsonl")
		cmd.Stdin = strings.NewReader(lines.String())
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("lm queue add --jsonl: %v: %s", err, out)
		}
		times[i] = time.Since(start)
	}
	slices.Sort(times)
	return times[runs/2], nil
}
