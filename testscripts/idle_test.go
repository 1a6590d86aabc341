package testscripts

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/proc"
)

// Waiting must cost nothing: a process that waits for news spends no CPU
// beyond wake-ups that carry some, and writes nothing to disk. Each test
// below lets one waiting path wait for idleWindow, reads the process's own
// counters from /proc, then commits from another process and checks that
// the waiter wakes.
const (
	idleWindow = 2 * time.Second
	// maxIdleCPU is twenty times what a wait should cost, so the bound
	// does not flake on a busy machine while a busy loop still fails it.
	maxIdleCPU = 50 * time.Millisecond
)

// assertIdle measures pid over idleWindow and fails if it did work.
func assertIdle(t *testing.T, what string, pid int) {
	t.Helper()
	before, err := proc.UsageOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(idleWindow)
	after, err := proc.UsageOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	cpu, written := after.Sub(before).CPU, after.Sub(before).Written
	t.Logf("%s over %s of waiting: %s CPU, %d bytes written", what, idleWindow, cpu, written)
	if written != 0 {
		t.Errorf("%s wrote %d bytes to disk while waiting", what, written)
	}
	if cpu > maxIdleCPU {
		t.Errorf("%s used %s of CPU while waiting (bound %s)", what, cpu, maxIdleCPU)
	}
}

// startIdle starts an lm process on home whose stdout the test reads.
func startIdle(t *testing.T, home string, stdin io.Reader, args ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command("lm", args...)
	cmd.Env = lmEnv(home)
	cmd.Stdin = stdin
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewReader(out)
}

// readLine reads one line of a waiter's output, failing after a while: a
// waiter that does not wake never writes it.
func readLine(t *testing.T, r *bufio.Reader, what string) string {
	t.Helper()
	line := make(chan string, 1)
	go func() {
		s, _ := r.ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if s == "" {
			t.Fatalf("%s ended without output", what)
		}
		return s
	case <-time.After(15 * time.Second):
		t.Fatalf("%s did not wake after a commit from another process", what)
		return ""
	}
}

// waitingStore is a store whose get_user_request waits a minute.
func waitingStore(t *testing.T) string {
	home := t.TempDir()
	runLM(t, home, "", "queue", "config", "default_wait_seconds=60")
	return home
}

// settle gives a process time to reach its wait, so its start-up is not
// counted as waiting.
func settle() { time.Sleep(500 * time.Millisecond) }

func TestQueueNextWaitsForFree(t *testing.T) {
	home := waitingStore(t)
	cmd, out := startIdle(t, home, nil, "queue", "next")
	settle()
	assertIdle(t, "lm queue next", cmd.Process.Pid)
	runLM(t, home, "", "queue", "add", "wake up")
	if line := readLine(t, out, "lm queue next"); !strings.Contains(line, "wake up") {
		t.Fatalf("lm queue next gave %s", line)
	}
}

func TestQueueWatchWaitsForFree(t *testing.T) {
	home := waitingStore(t)
	cmd, out := startIdle(t, home, nil, "queue", "watch")
	settle()
	assertIdle(t, "lm queue watch", cmd.Process.Pid)
	runLM(t, home, "", "queue", "add", "wake up")
	for {
		if line := readLine(t, out, "lm queue watch"); strings.Contains(line, "wake up") {
			return
		}
	}
}

// mcpOverStdio starts `lm mcp` and initializes a session by hand, so the
// test has the process to measure.
func mcpOverStdio(t *testing.T, home string) (*exec.Cmd, io.Writer, *bufio.Reader) {
	t.Helper()
	in, w := io.Pipe()
	cmd, out := startIdle(t, home, in, "mcp")
	t.Cleanup(func() { w.Close() })
	fmt.Fprintln(w, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}}`)
	readLine(t, out, "lm mcp's initialize")
	fmt.Fprintln(w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return cmd, w, out
}

func TestMCPBetweenRequestsIsFree(t *testing.T) {
	cmd, _, _ := mcpOverStdio(t, waitingStore(t))
	settle()
	assertIdle(t, "lm mcp between requests", cmd.Process.Pid)
}

func TestGetUserRequestOverStdioWaitsForFree(t *testing.T) {
	home := waitingStore(t)
	cmd, w, out := mcpOverStdio(t, home)
	fmt.Fprintln(w, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_user_request","arguments":{}}}`)
	settle()
	assertIdle(t, "get_user_request over lm mcp", cmd.Process.Pid)
	runLM(t, home, "", "queue", "add", "wake up")
	for {
		line := readLine(t, out, "get_user_request over lm mcp")
		if strings.Contains(line, `"id":2`) {
			if !strings.Contains(line, "wake up") {
				t.Fatalf("get_user_request answered %s", line)
			}
			return
		}
	}
}

// quietProject is a directory whose task quiet prints nothing for a minute.
func quietProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte("quiet:\n\t@sleep 60\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// quietJob starts the quiet task as a job.
func quietJob(t *testing.T, home string) string {
	t.Helper()
	dir := quietProject(t)
	cmd := exec.Command("lm", "jobs", "start", "quiet", "-r", "--jq", ".job.job_id")
	cmd.Dir, cmd.Env = dir, lmEnv(home)
	id, err := cmd.Output()
	if err != nil {
		t.Fatalf("lm jobs start: %v", err)
	}
	t.Cleanup(func() { exec.Command("lm", "jobs", "stop", "--grace", "0s", strings.TrimSpace(string(id))).Run() })
	return strings.TrimSpace(string(id))
}

func TestJobWaitersWaitForFree(t *testing.T) {
	for _, args := range [][]string{{"logs", "-f"}, {"wait"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			home := t.TempDir()
			id := quietJob(t, home)
			cmd, out := startIdle(t, home, nil, append([]string{"jobs", args[0], id}, args[1:]...)...)
			settle()
			assertIdle(t, "lm jobs "+strings.Join(args, " "), cmd.Process.Pid)
			runLM(t, home, "", "jobs", "stop", "--grace", "0s", id)
			done := make(chan error, 1)
			go func() { io.Copy(io.Discard, out); done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				t.Fatal("the waiter did not end when its job was stopped")
			}
		})
	}
}

func TestJobStartWaitWaitsForFree(t *testing.T) {
	home := t.TempDir()
	dir := quietProject(t)
	cmd := exec.Command("lm", "jobs", "start", "quiet", "--wait", "60s")
	cmd.Dir, cmd.Env = dir, lmEnv(home)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var id string
	waitFor(t, func() bool {
		out, _ := runLM(t, home, "", "jobs", "list", "-r", "--jq", ".jobs[0].job_id // empty")
		id = strings.TrimSpace(out)
		return id != ""
	})
	settle()
	assertIdle(t, "lm jobs start --wait", cmd.Process.Pid)
	runLM(t, home, "", "jobs", "stop", "--grace", "0s", id)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("lm jobs start --wait did not end when its job was stopped")
	}
}

// idleGateway starts a gateway on a loopback port and returns it with its
// base URL and the token that opens it.
func idleGateway(t *testing.T, home string, args ...string) (*exec.Cmd, string, string) {
	t.Helper()
	return idleGatewayWith(t, home, "idle-test-token", args...)
}

// idleGatewayWith is idleGateway with the person's token given.
func idleGatewayWith(t *testing.T, home, token string, args ...string) (*exec.Cmd, string, string) {
	t.Helper()
	return gatewayIn(t, lmEnv(home), token, args...)
}

// gatewayIn starts `lm gateway` on a free loopback port in env, with the
// person's token given, and returns it with its base URL and the token.
func gatewayIn(t *testing.T, env []string, token string, args ...string) (*exec.Cmd, string, string) {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "addr")
	cmd := exec.Command("lm", append([]string{"gateway", "--addr", "127.0.0.1:0", "--addr-file", addrFile}, args...)...)
	cmd.Env = append(env, "LM_API_TOKEN="+token)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var addr []byte
	waitFor(t, func() bool {
		addr, _ = os.ReadFile(addrFile)
		return len(bytes.TrimSpace(addr)) > 0
	})
	return cmd, "http://" + strings.TrimSpace(string(addr)), token
}

func gatewayRequest(t *testing.T, method, url, token, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestIdleGatewayIsFree(t *testing.T) {
	home := waitingStore(t)
	gw, _, _ := idleGateway(t, home)
	settle()
	assertIdle(t, "an idle gateway", gw.Process.Pid)
}

// A supervised server with no traffic costs its gateway only the health
// probes it is configured for: none fall inside the window here.
func TestGatewayWithAnIdleServerIsFree(t *testing.T) {
	home := waitingStore(t)
	runLM(t, home, "", "servers", "add", "quiet", "--auto-start", "--", "lm", "mcp")
	gw, url, token := idleGateway(t, home)
	waitFor(t, func() bool {
		resp := gatewayRequest(t, "GET", url+"/servers/quiet", token, "")
		body, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(body), `"running"`)
	})
	settle()
	assertIdle(t, "a gateway supervising an idle server", gw.Process.Pid)
}

func TestEventSubscriberWaitsForFree(t *testing.T) {
	home := waitingStore(t)
	gw, url, token := idleGateway(t, home)
	resp := gatewayRequest(t, "GET", url+"/api/events", token, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/events: %s", resp.Status)
	}
	settle()
	assertIdle(t, "a gateway with an /api/events subscriber", gw.Process.Pid)
	runLM(t, home, "", "queue", "add", "wake up")
	events := bufio.NewReader(resp.Body)
	for {
		if line := readLine(t, events, "/api/events"); strings.Contains(line, "wake up") {
			return
		}
	}
}

func TestGetUserRequestOverTheGatewayWaitsForFree(t *testing.T) {
	for _, mode := range []string{"stateless", "stateful"} {
		t.Run(mode, func(t *testing.T) {
			home := waitingStore(t)
			var args []string
			if mode == "stateful" {
				args = append(args, "--stateful")
			}
			gw, url, token := idleGateway(t, home, args...)
			init := gatewayRequest(t, "POST", url+"/mcp", token,
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}}`)
			if init.StatusCode != http.StatusOK {
				t.Fatalf("initialize: %s", init.Status)
			}
			session := init.Header.Get("Mcp-Session-Id")
			io.Copy(io.Discard, init.Body)
			answer := make(chan string, 1)
			go func() {
				req, _ := http.NewRequest("POST", url+"/mcp", strings.NewReader(
					`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_user_request","arguments":{"agent_id":"idle"}}}`))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
				if session != "" {
					req.Header.Set("Mcp-Session-Id", session)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					answer <- err.Error()
					return
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				answer <- string(body)
			}()
			settle()
			assertIdle(t, "get_user_request over the "+mode+" gateway", gw.Process.Pid)
			runLM(t, home, "", "queue", "add", "wake up")
			select {
			case body := <-answer:
				if !strings.Contains(body, "wake up") {
					t.Fatalf("get_user_request answered %s", body)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("get_user_request over the gateway did not wake")
			}
		})
	}
}
