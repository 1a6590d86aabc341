package hub

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/proc"
	"lmtool.dev/lm/pkg/servers"
)

// track records a server's status at every state change until the test
// ends, and returns a function that reports what was seen so far.
func track(t *testing.T, h *Hub, name string) func() []servers.Status {
	t.Helper()
	changes, stop := h.Watch()
	var mu sync.Mutex
	var seen []servers.Status
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-changes:
				s := h.child(name).status()
				mu.Lock()
				if len(seen) == 0 || seen[len(seen)-1].State != s.State {
					seen = append(seen, s)
				}
				mu.Unlock()
			case <-done:
				return
			}
		}
	}()
	t.Cleanup(func() { stop(); close(done) })
	return func() []servers.Status {
		mu.Lock()
		defer mu.Unlock()
		return append([]servers.Status(nil), seen...)
	}
}

// awaitState polls a server's status until it is in state, for up to d.
func awaitState(t *testing.T, h *Hub, name, state string, d time.Duration) servers.Status {
	t.Helper()
	var s servers.Status
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if s = h.child(name).status(); s.State == state {
			return s
		}
	}
	t.Fatalf("%s never became %s: %+v", name, state, s)
	return s
}

func states(seen []servers.Status) []string {
	out := make([]string, len(seen))
	for i, s := range seen {
		out[i] = s.State
	}
	return out
}

func TestCrashLoopShowsWhenItRetriesUntilItGivesUp(t *testing.T) {
	h, _ := startHub(t, `{"mcpServers": {"broken": {"command": "sh", "args": ["-c", "echo bad flag --port >&2; exit 2"],
		"max_restarts": 2, "restart_delay": 0.3}}}`)
	seen := track(t, h, "broken")
	h.child("broken").start()
	final := awaitState(t, h, "broken", servers.Failed, 20*time.Second)
	var restarting []servers.Status
	for _, s := range seen() {
		if s.State == servers.Restarting {
			restarting = append(restarting, s)
		}
	}
	if len(restarting) != 2 {
		t.Fatalf("want two restarts before giving up, saw %v", states(seen()))
	}
	for _, s := range restarting {
		if s.NextRetryAt == nil || s.NextRetryAt.Before(time.Now().Add(-time.Minute)) || s.LastExit != "exit status 2" ||
			!strings.Contains(s.LastError, "bad flag --port") {
			t.Errorf("a restarting server says when it retries, how it ended and why: %+v", s)
		}
	}
	// The delay doubles: 0.3 s, then 0.6 s.
	if gap := restarting[1].NextRetryAt.Sub(*restarting[0].NextRetryAt); gap < 600*time.Millisecond {
		t.Errorf("the second retry came %s after the first; the delay should double", gap)
	}
	if final.NextRetryAt != nil || final.RestartCount != 2 || !strings.Contains(final.LastError, "gave up after 2 restarts") {
		t.Errorf("a server that gave up has no next retry: %+v", final)
	}
}

func TestFirstStartOfADownloadingServerIsInstalling(t *testing.T) {
	// A command named npx that takes its time before serving, as npx does
	// while it downloads the package.
	dir := t.TempDir()
	npx := filepath.Join(dir, "npx")
	script := "#!/bin/sh\nsleep 3\nexec " + strconv.Quote(os.Args[0]) + "\n"
	if err := os.WriteFile(npx, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	h, _ := startHub(t, `{"mcpServers": {"fetched": {"command": "`+npx+`", "args": ["-y", "some-mcp-server"], "env": {"LM_HUB_TEST_CHILD": "plain"}}}}`)
	seen := track(t, h, "fetched")
	h.child("fetched").start()
	awaitState(t, h, "fetched", servers.Running, time.Minute)
	if got := strings.Join(states(seen()), " "); !strings.Contains(got, "starting installing running") {
		t.Fatalf("states %q: a slow first start of an npx server is shown as installing", got)
	}
}

func TestSlowProbeAnswersAreDegraded(t *testing.T) {
	h, _ := startHub(t, `{"mcpServers": {"slow": {`+childServer(t, "slow-ping", nil)+`, "health_check_interval": 0.1}}}`)
	h.child("slow").start()
	awaitState(t, h, "slow", servers.Running, time.Minute)
	awaitState(t, h, "slow", servers.Degraded, 20*time.Second)
	var s servers.Status
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if s = h.child("slow").status(); s.LatencyMS >= 1000 {
			break
		}
	}
	if !s.Healthy() || s.LatencyMS < 1000 || s.Pid == 0 {
		t.Fatalf("degraded is slow but serving, with the probe's latency: %+v", s)
	}
}

// A frozen server (SIGSTOP) is shown degraded as soon as a probe goes
// unanswered past degradedAfter, not only once the probe times out.
func TestFrozenServerIsDegradedAtOnce(t *testing.T) {
	h, _ := startHub(t, `{"mcpServers": {"frozen": {`+childServer(t, "plain", nil)+`, "health_check_interval": 0.2}}}`)
	h.child("frozen").start()
	s := awaitState(t, h, "frozen", servers.Running, time.Minute)
	if err := syscall.Kill(s.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(s.Pid, syscall.SIGCONT)
	// Within half the probe's timeout: before the probe could fail.
	awaitState(t, h, "frozen", servers.Degraded, probeTimeout/2)
}

func TestStoppingKillsTheWholeProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
	h, _ := startHub(t, `{"mcpServers": {"tree": {`+childServer(t, "grandchild", map[string]string{"GRANDCHILD_PID": pidFile})+`}}}`)
	h.child("tree").start()
	s := awaitState(t, h, "tree", servers.Running, time.Minute)
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	grandchild, _ := strconv.Atoi(string(data))
	// The gateway's shutdown: both ignore SIGTERM, so only the group's
	// SIGKILL ends them.
	began := time.Now()
	h.Close()
	for _, pid := range []int{s.Pid, grandchild} {
		for proc.Running(pid) {
			if time.Since(began) > 20*time.Second {
				t.Fatalf("process %d outlived the hub", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if took := time.Since(began); took < stopGrace {
		t.Errorf("stopped in %s: SIGTERM must be given %s before SIGKILL", took, stopGrace)
	}
	// Nor does anything else of the group (the lifeline's watcher).
	for len(groupMembers(s.Pid)) > 0 {
		if time.Since(began) > 20*time.Second {
			t.Fatalf("processes %v of the child's group outlived the hub", groupMembers(s.Pid))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupMembers are the running processes of process group pgid.
func groupMembers(pgid int) []int {
	var pids []int
	for _, p := range proc.All() {
		if p.PGRP == pgid && p.State != 'Z' {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

func TestAutoStartOnFirstUse(t *testing.T) {
	h, url := startHub(t, `{"mcpServers": {
		"lazy": {`+childServer(t, "plain", nil)+`, "auto_start": true},
		"manual": {`+childServer(t, "plain", nil)+`}}}`)
	awaitState(t, h, "lazy", servers.Running, time.Minute)
	h.child("lazy").stop()
	if s := h.child("lazy").status(); s.State != servers.Stopped {
		t.Fatalf("stopped: %+v", s)
	}
	cl := connect(t, url+"/mcp/lazy")
	if r, err := call(t, cl, "echo", map[string]any{"message": "woken"}); err != nil || text(r) != "Echo: woken" {
		t.Fatalf("an auto-start server is started by its first call: %+v %v", r, err)
	}
	if s := h.child("lazy").status(); s.State != servers.Running {
		t.Fatalf("after first use: %+v", s)
	}
	// A server without auto_start is not started behind the user's back.
	res, err := http.Post(url+"/mcp/manual", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "lm servers start manual") {
		t.Fatalf("a stopped server: %d %s", res.StatusCode, body)
	}
	if s := h.child("manual").status(); s.State != servers.Stopped {
		t.Fatalf("manual: %+v", s)
	}
}

func TestUpstreamListChangesReachClients(t *testing.T) {
	h, url := startHubWith(t, `{"settings": {}, "mcpServers": {"grows": {`+childServer(t, "grows", nil)+`, "auto_start": true}}}`, io.Discard, true)
	awaitState(t, h, "grows", servers.Running, time.Minute)
	cl := connect(t, url+"/mcp", transport.WithContinuousListening())
	changed := toolListChanges(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	init, err := cl.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for len(changed) > 0 {
		<-changed
	}
	if r, err := call(t, cl, "grows__grow", nil); err != nil || text(r) != "added grown_1" {
		t.Fatalf("grow: %+v %v", r, err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("the child's tools/list_changed was not passed on to /mcp's client")
	}
	for !hasTool(t, cl, "grows__grown_1") {
		if ctx.Err() != nil {
			t.Fatalf("the new tool never appeared on /mcp; it had %d tools", len(init.Tools))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r, err := call(t, cl, "grows__grown_1", nil); err != nil || text(r) != "grown_1" {
		t.Fatalf("the new tool through /mcp: %+v %v", r, err)
	}
	own := connect(t, url+"/mcp/grows")
	if !hasTool(t, own, "grown_1") {
		t.Fatal("the new tool is not on /mcp/grows")
	}
}

func hasTool(t *testing.T, cl *client.Client, name string) bool {
	t.Helper()
	res, err := cl.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == name {
			return true
		}
	}
	return false
}

func TestNamesOnMCPAreSafeAndCollisionsReported(t *testing.T) {
	h, url := startHub(t, `{"mcpServers": {"grows": {`+childServer(t, "grows", nil)+`, "auto_start": true}}}`)
	s := awaitState(t, h, "grows", servers.Running, time.Minute)
	cl := connect(t, url+"/mcp")
	ctx := context.Background()
	tools, err := cl.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	prompts, err := cl.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	resources, err := cl.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, p := range prompts.Prompts {
		names = append(names, p.Name)
	}
	for _, r := range resources.Resources {
		names = append(names, r.Name)
	}
	got := map[string]bool{}
	for _, n := range names {
		got[n] = true
		if len(n) > maxNameLen || strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			t.Errorf("%q is not a name every client accepts ([A-Za-z0-9_-], at most 64)", n)
		}
	}
	for _, want := range []string{"grows__files_read", "grows__search_all_docs", "grows__summarise__brief", "grows__today_s_notes_md", "queue_add"} {
		if !got[want] {
			t.Errorf("%s is missing from %v", want, names)
		}
	}
	long := Namespaced("grows", strings.Repeat("very_long_tool_name_", 4))
	if !got[long] || len(long) != maxNameLen {
		t.Errorf("a long name is cut to 64 and kept unique: %q in %v", long, names)
	}
	// files.read and files_read both become grows__files_read: one is
	// served, the other is reported, and the server runs on.
	if len(s.Collisions) != 1 || !strings.Contains(s.Collisions[0], "as grows__files_read") {
		t.Fatalf("collisions: %+v", s.Collisions)
	}
	if r, err := call(t, cl, "grows__search_all_docs", nil); err != nil || text(r) != "ok" {
		t.Fatalf("a sanitised name still reaches its tool: %+v %v", r, err)
	}
	p, err := cl.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "grows__summarise__brief"}})
	if err != nil || len(p.Messages) != 1 {
		t.Fatalf("a sanitised prompt name still reaches its prompt: %+v %v", p, err)
	}
}

// A child flooding stderr on every start costs at most twice the log size
// on disk, and the log keeps the newest lines.
func TestStderrLogIsCappedAndRotated(t *testing.T) {
	h, _ := startHub(t, `{"mcpServers": {"noisy": {"command": "sh", "args": ["-c", "yes 'a line of noise on stderr' | head -c 8000000 >&2; echo end-of-flood >&2; exit 3"],
		"max_restarts": 1, "restart_delay": 0.1}}}`)
	if err := os.WriteFile(filepath.Join(h.home, "config.toml"), []byte("[servers]\nlog_size = 65536\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.child("noisy").start()
	awaitState(t, h, "noisy", servers.Failed, time.Minute)
	log := servers.LogPath(h.home, "noisy")
	total := int64(0)
	for _, p := range []string{log, log + ".1"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
	}
	if total > 2*65536 {
		t.Errorf("two starts writing 8 MB each left %d bytes of log", total)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "end-of-flood") {
		t.Errorf("the log lost the newest line: ends %q", data[max(0, len(data)-100):])
	}
}

// A log_size too small to hold anything useful is refused at start.
func TestStderrLogSizeIsChecked(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("[servers]\nlog_size = 10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := logSize(home); err == nil || !strings.Contains(err.Error(), "want at least 4096 bytes") {
		t.Fatalf("log_size = 10: %v", err)
	}
	if n, err := logSize(t.TempDir()); err != nil || n != DefaultLogSize {
		t.Fatalf("no config: %d %v", n, err)
	}
}

// A child that writes a line without end is killed once the line passes
// what the gateway reads of one message: the call fails instead of the
// gateway's memory filling, the status says why, and the server restarts.
func TestAChildsEndlessLineIsCut(t *testing.T) {
	h, url := startHub(t, `{"mcpServers": {"endless": {`+childServer(t, "endless", nil)+`, "auto_start": true, "restart_delay": 0.05, "timeout": 120}}}`)
	before := settled(t, h, "endless")
	if before.State != servers.Running {
		t.Fatalf("endless: %+v", before)
	}
	cl := connect(t, url+"/mcp/endless")
	if r, err := call(t, cl, "endless", nil); err == nil && !r.IsError {
		t.Fatalf("a call answered with an endless line succeeded: %d bytes", len(text(r)))
	}
	var after servers.Status
	for i := 0; i < 600; i++ { // the restart takes a moment; bounded at a minute
		after = h.child("endless").status()
		if after.State == servers.Running && after.Pid != before.Pid {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if after.State != servers.Running || after.Pid == before.Pid || !strings.Contains(after.LastExit, "longer than 32 MiB") {
		t.Fatalf("after the endless line: %+v", after)
	}
	if _, err := syscall.Getpgid(before.Pid); err == nil {
		t.Errorf("the child that wrote the endless line (pid %d) still runs", before.Pid)
	}
	if r, err := call(t, connect(t, url+"/mcp/endless"), "echo", map[string]any{"message": "again"}); err != nil || text(r) != "Echo: again" {
		t.Fatalf("after the restart: %+v %v", r, err)
	}
}
