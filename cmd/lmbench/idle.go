package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"lmtool.dev/lm/pkg/proc"
)

// idleWindow is how long each waiting path is watched; figures are scaled
// to a minute.
const idleWindow = 10 * time.Second

// waiter is one waiting path: start puts a process into its wait and
// returns it with a function that ends everything it started.
type waiter struct {
	name  string
	start func(lm, dir string) (pid int, stop func(), err error)
}

// idleCost measures what each waiting path costs per minute of waiting
// with nothing to deliver, against a process asleep in sleep(1).
func idleCost(lm string) error {
	fmt.Println("## What waiting costs")
	fmt.Println()
	fmt.Printf("CPU time and bytes written to storage per minute of waiting with nothing to deliver (each path watched for %s after it settled, CPU from the scheduler's per-thread counters in /proc/PID/task/*/schedstat, bytes from /proc/PID/io; target < 10 ms and 0 bytes). The reference is a process asleep in `sleep`.\n\n", idleWindow)
	fmt.Println("| waiting path | CPU per minute | bytes written per minute |")
	fmt.Println("|---|---|---|")
	for _, w := range waiters() {
		cost, err := w.costDuring(lm, func(string) error {
			time.Sleep(idleWindow)
			return nil
		})
		if err != nil {
			return err
		}
		perMinute := time.Minute / idleWindow
		fmt.Printf("| %s | %s | %d |\n", w.name, ms(cost.CPU*perMinute), cost.Written*int64(perMinute))
	}
	fmt.Println()
	return followCost(lm)
}

// followCost measures what another process's commit costs a process that
// follows the store, against `lm queue watch`, which does the least such
// work: read the new events and print them.
func followCost(lm string) error {
	const commits = 300
	fmt.Println("### What another process's commit costs a follower")
	fmt.Println()
	fmt.Printf("CPU time per commit made by another process (%d `lm queue add`s in a row; target for the gateway ≤ 0.2 ms and near `lm queue watch`):\n\n", commits)
	fmt.Println("| follower | CPU per outside commit | × `lm queue watch` |")
	fmt.Println("|---|---|---|")
	followers := []waiter{
		waiterNamed("`lm queue watch`"),
		waiterNamed("an idle gateway"),
		waiterNamed("a gateway with an `/api/events` subscriber"),
	}
	var reference time.Duration
	for i, w := range followers {
		cost, err := w.costDuring(lm, func(dir string) error {
			for n := range commits {
				if err := command(dir, lm, "queue", "add", fmt.Sprintf("commit %d", n)).Run(); err != nil {
					return err
				}
			}
			time.Sleep(500 * time.Millisecond)
			return nil
		})
		if err != nil {
			return err
		}
		per := cost.CPU / commits
		if i == 0 {
			reference = per
		}
		fmt.Printf("| %s | %s | %.2f |\n", w.name, ms(per), float64(per)/float64(reference))
	}
	return nil
}

// costDuring starts the waiting path in a fresh LM_HOME, lets it settle,
// and returns what its process spent while activity ran there.
func (w waiter) costDuring(lm string, activity func(dir string) error) (proc.Usage, error) {
	dir, done := home()
	defer done()
	pid, stop, err := w.start(lm, dir)
	if err != nil {
		return proc.Usage{}, fmt.Errorf("%s: %w", w.name, err)
	}
	defer stop()
	time.Sleep(time.Second)
	before, err := proc.UsageOf(pid)
	if err != nil {
		return proc.Usage{}, fmt.Errorf("%s: %w", w.name, err)
	}
	if err := activity(dir); err != nil {
		return proc.Usage{}, fmt.Errorf("%s: %w", w.name, err)
	}
	after, err := proc.UsageOf(pid)
	if err != nil {
		return proc.Usage{}, fmt.Errorf("%s: %w", w.name, err)
	}
	return after.Sub(before), nil
}

// background starts cmd with its output discarded.
func background(cmd *exec.Cmd) (int, func(), error) {
	cmd.Stdout, cmd.Stderr = io.Discard, nil
	if err := cmd.Start(); err != nil {
		return 0, nil, err
	}
	return cmd.Process.Pid, func() { cmd.Process.Kill(); cmd.Wait() }, nil
}

// waitingQueue makes get_user_request wait longer than a measurement.
func waitingQueue(lm, dir string) error {
	return command(dir, lm, "queue", "config", "default_wait_seconds=600").Run()
}

// quietJob starts a job that prints nothing for ten minutes.
func quietJob(lm, dir string) (string, error) {
	project := filepath.Join(dir, "project")
	if err := os.MkdirAll(project, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(project, "Makefile"), []byte("quiet:\n\t@sleep 600\n"), 0o600); err != nil {
		return "", err
	}
	cmd := command(dir, lm, "jobs", "start", "quiet", "-r", "--jq", ".job.job_id")
	cmd.Dir = project
	id, err := cmd.Output()
	return strings.TrimSpace(string(id)), err
}

const benchToken = "lmbench-idle-token"

// idleGateway starts a gateway and returns its pid, base URL and stop.
func idleGateway(lm, dir string, args ...string) (*httpProcess, error) {
	addrFile := filepath.Join(dir, "addr")
	cmd := command(dir, lm, append([]string{"gateway", "--addr", "127.0.0.1:0", "--addr-file", addrFile}, args...)...)
	cmd.Env = append(cmd.Env, "LM_API_TOKEN="+benchToken)
	return startServer(cmd, addrFile)
}

// hold sends a request whose answer waits, and returns without reading it.
func hold(method, url, body, session string) (*http.Response, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+benchToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	return http.DefaultClient.Do(req)
}

// gatewayGetUserRequest leaves a get_user_request waiting on a gateway's
// /mcp.
func gatewayGetUserRequest(lm, dir string, args ...string) (int, func(), error) {
	if err := waitingQueue(lm, dir); err != nil {
		return 0, nil, err
	}
	gw, err := idleGateway(lm, dir, args...)
	if err != nil {
		return 0, nil, err
	}
	init, err := hold("POST", gw.base+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"lmbench","version":"1"}}}`, "")
	if err != nil {
		gw.stop()
		return 0, nil, err
	}
	io.Copy(io.Discard, init.Body)
	init.Body.Close()
	go func() {
		resp, err := hold("POST", gw.base+"/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_user_request","arguments":{"agent_id":"lmbench"}}}`, init.Header.Get("Mcp-Session-Id"))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	return gw.cmd.Process.Pid, gw.stop, nil
}

func waiterNamed(name string) waiter {
	for _, w := range waiters() {
		if w.name == name {
			return w
		}
	}
	panic("no waiting path " + name)
}

func waiters() []waiter {
	return []waiter{
		{"reference: `sleep`", func(lm, dir string) (int, func(), error) {
			return background(exec.Command("sleep", "600"))
		}},
		{"`lm queue next`", func(lm, dir string) (int, func(), error) {
			if err := waitingQueue(lm, dir); err != nil {
				return 0, nil, err
			}
			return background(command(dir, lm, "queue", "next"))
		}},
		{"`lm queue watch`", func(lm, dir string) (int, func(), error) {
			return background(command(dir, lm, "queue", "watch"))
		}},
		{"`lm mcp` between requests", func(lm, dir string) (int, func(), error) {
			s, err := startSession(command(dir, lm, "mcp"))
			if err != nil {
				return 0, nil, err
			}
			return s.cmd.Process.Pid, s.close, nil
		}},
		{"`get_user_request` over `lm mcp`", func(lm, dir string) (int, func(), error) {
			if err := waitingQueue(lm, dir); err != nil {
				return 0, nil, err
			}
			s, err := startSession(command(dir, lm, "mcp"))
			if err != nil {
				return 0, nil, err
			}
			fmt.Fprintln(s.in, `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"get_user_request","arguments":{}}}`)
			return s.cmd.Process.Pid, func() { s.cmd.Process.Kill(); s.cmd.Wait() }, nil
		}},
		{"`lm jobs logs -f` on a silent job", func(lm, dir string) (int, func(), error) {
			id, err := quietJob(lm, dir)
			if err != nil {
				return 0, nil, err
			}
			pid, stop, err := background(command(dir, lm, "jobs", "logs", id, "-f"))
			return pid, func() { stop(); command(dir, lm, "jobs", "stop", "--grace", "0s", id).Run() }, err
		}},
		{"`lm jobs wait`", func(lm, dir string) (int, func(), error) {
			id, err := quietJob(lm, dir)
			if err != nil {
				return 0, nil, err
			}
			pid, stop, err := background(command(dir, lm, "jobs", "wait", id))
			return pid, func() { stop(); command(dir, lm, "jobs", "stop", "--grace", "0s", id).Run() }, err
		}},
		{"an idle gateway", func(lm, dir string) (int, func(), error) {
			gw, err := idleGateway(lm, dir)
			if err != nil {
				return 0, nil, err
			}
			return gw.cmd.Process.Pid, gw.stop, nil
		}},
		{"a gateway supervising an idle server", func(lm, dir string) (int, func(), error) {
			if err := command(dir, lm, "servers", "add", "quiet", "--auto-start", "--", lm, "mcp").Run(); err != nil {
				return 0, nil, err
			}
			gw, err := idleGateway(lm, dir)
			if err != nil {
				return 0, nil, err
			}
			return gw.cmd.Process.Pid, gw.stop, nil
		}},
		{"a gateway with an `/api/events` subscriber", func(lm, dir string) (int, func(), error) {
			gw, err := idleGateway(lm, dir)
			if err != nil {
				return 0, nil, err
			}
			resp, err := hold("GET", gw.base+"/api/events", "", "")
			if err != nil {
				gw.stop()
				return 0, nil, err
			}
			return gw.cmd.Process.Pid, func() { resp.Body.Close(); gw.stop() }, nil
		}},
		{"`get_user_request` on the gateway's stateless `/mcp`", func(lm, dir string) (int, func(), error) {
			return gatewayGetUserRequest(lm, dir)
		}},
		{"`get_user_request` on the gateway's stateful `/mcp`", func(lm, dir string) (int, func(), error) {
			return gatewayGetUserRequest(lm, dir, "--stateful")
		}},
	}
}
