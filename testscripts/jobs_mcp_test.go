package testscripts

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// startMCPIn starts `lm mcp` in a project directory (dir, or the test's own
// when empty), as an agent's client configured with a working directory
// would, and initializes a session named name.
func startMCPIn(t *testing.T, home, dir, name string) *client.Client {
	t.Helper()
	return startMCPEnv(t, []string{"LM_HOME=" + home, "LM_STORE="}, dir, name)
}

// startMCPEnv starts `lm mcp` in dir with env added to the test's own, and
// initializes a session named name.
func startMCPEnv(t *testing.T, env []string, dir, name string) *client.Client {
	t.Helper()
	c, _ := startMCPProcess(t, env, dir, name)
	return c
}

// startMCPProcess is startMCPEnv that also returns the `lm mcp` process.
func startMCPProcess(t *testing.T, env []string, dir, name string) (*client.Client, *exec.Cmd) {
	t.Helper()
	var proc *exec.Cmd
	inDir := transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
		proc = exec.CommandContext(ctx, command, args...)
		proc.Env, proc.Dir = append(os.Environ(), env...), dir
		return proc, nil
	})
	c, err := client.NewStdioMCPClientWithOptions("lm", env, []string{"mcp"}, inDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// NewStdioMCPClient starts the transport but leaves the client's
	// notification routing to Start, which is idempotent. The process lives
	// as long as the context given here, so it is not the call's context.
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: name, Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	return c, proc
}

// jobNotes collects what the server streams about jobs.
type jobNotes struct {
	mu       sync.Mutex
	chunks   map[string][]string // job id → chunks in arrival order
	ended    map[string]bool     // job id → its eof message arrived
	progress []float64
}

func (n *jobNotes) handle(note mcp.JSONRPCNotification) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch note.Method {
	case "notifications/progress":
		if p, ok := note.Params.AdditionalFields["progress"].(float64); ok {
			n.progress = append(n.progress, p)
		}
	case "notifications/message":
		data, _ := note.Params.AdditionalFields["data"].(map[string]any)
		id, _ := data["job_id"].(string)
		if chunk, ok := data["chunk"].(string); ok {
			n.chunks[id] = append(n.chunks[id], chunk)
		}
		if data["eof"] == true {
			n.ended[id] = true
		}
	}
}

func (n *jobNotes) snapshot(id string) ([]string, bool, []float64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.chunks[id]...), n.ended[id], append([]float64(nil), n.progress...)
}

// runTask calls run_task and decodes its structured result.
func runTask(ctx context.Context, t *testing.T, c *client.Client, token mcp.ProgressToken, args map[string]any) map[string]any {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = "run_task"
	req.Params.Arguments = args
	if token != nil {
		req.Params.Meta = &mcp.Meta{ProgressToken: token}
	}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("run_task %v: %v", args, res.Content)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func readResource(ctx context.Context, t *testing.T, c *client.Client, uri string, into any) {
	t.Helper()
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := c.ReadResource(ctx, req)
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	text, ok := res.Contents[0].(mcp.TextResourceContents)
	if !ok {
		t.Fatalf("read %s: %T", uri, res.Contents[0])
	}
	if err := json.Unmarshal([]byte(text.Text), into); err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
}

// TestRunTaskStreamsThroughAnMCPClient drives run_task through mcp-go's
// client: a refused task, a task printing every 100 ms whose output arrives
// as logging notifications of at most 8 KiB with progress, the job:// and
// joblog:// resources, and stop. The allowlist is unchanged at the end.
func TestRunTaskStreamsThroughAnMCPClient(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	files := map[string]string{
		"Makefile": "deploy:\n\techo deploying\n",
		"ticks.sh": "#!/bin/sh\ni=0; while [ $i -lt 10 ]; do echo tick $i; i=$((i+1)); sleep 0.1; done\n",
		"flood.sh": "#!/bin/sh\nhead -c 100000 /dev/zero | tr '\\0' x\n",
		"serve.sh": "#!/bin/sh\necho serving; exec sleep 300\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(proj, name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	allowlist := fmt.Sprintf("[[entries]]\npath = %q\nscope = \"Directory\"\n\n[[entries]]\npath = %q\nscope = \"Deny\"\ntasks = [\"deploy\"]\n",
		proj, filepath.Join(proj, "Makefile"))
	allowPath := filepath.Join(home, "mcp_allowlist.toml")
	if err := os.WriteFile(allowPath, []byte(allowlist), 0o600); err != nil {
		t.Fatal(err)
	}

	c := startMCPIn(t, home, proj, "jobs-test")
	notes := &jobNotes{chunks: map[string][]string{}, ended: map[string]bool{}}
	c.OnNotification(notes.handle)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	denied := runTask(ctx, t, c, nil, map[string]any{"op": "start", "task": "deploy"})
	if denied["ok"] != false || denied["code"] != "NotAllowlisted" || !strings.HasPrefix(denied["hint"].(string), "Ask a human") {
		t.Fatalf("deploy: %v", denied)
	}

	for _, c2 := range []struct {
		task, want string
	}{
		{"ticks", "tick 0\ntick 1\ntick 2\ntick 3\ntick 4\ntick 5\ntick 6\ntick 7\ntick 8\ntick 9\n"},
		{"flood", strings.Repeat("x", 100000)},
	} {
		t.Run(c2.task, func(t *testing.T) {
			res := runTask(ctx, t, c, "p-"+c2.task, map[string]any{"op": "start", "task": c2.task, "stream": true, "wait_ms": 30000})
			status, _ := res["status"].(map[string]any)
			if res["ok"] != true || res["state"] != "exited" || status["exit_code"] != float64(0) {
				t.Fatalf("%s: %v", c2.task, res)
			}
			id := res["job_id"].(string)
			waitFor(t, func() bool { _, ended, _ := notes.snapshot(id); return ended })
			chunks, _, progress := notes.snapshot(id)
			for _, ch := range chunks {
				if len(ch) > 8<<10 {
					t.Errorf("%s: a notification carried %d bytes", c2.task, len(ch))
				}
			}
			if got := strings.Join(chunks, ""); got != c2.want {
				t.Errorf("%s: streamed %d bytes in %d chunks, want %d bytes", c2.task, len(got), len(chunks), len(c2.want))
			}
			if c2.task == "ticks" && len(chunks) < 3 {
				t.Errorf("ticks arrived in %d notifications, not as they were printed", len(chunks))
			}
			if len(progress) == 0 || progress[len(progress)-1] != float64(len(c2.want)) {
				t.Errorf("%s: progress %v, want it to end at %d bytes", c2.task, progress, len(c2.want))
			}

			var log struct {
				From, To uint64
				Data     string
				EOF      bool
			}
			readResource(ctx, t, c, "joblog://"+id+"?from=5", &log)
			if log.From != 5 || log.To != uint64(min(len(c2.want), 5+64<<10)) || log.Data != c2.want[5:log.To] {
				t.Errorf("%s: joblog from 5 = %d..%d", c2.task, log.From, log.To)
			}
		})
	}

	started := runTask(ctx, t, c, nil, map[string]any{"op": "start", "task": "serve", "orphan_ttl_sec": 60})
	id := started["job_id"].(string)
	var job map[string]any
	waitFor(t, func() bool {
		readResource(ctx, t, c, "job://"+id, &job)
		return job["bytes_emitted"] == float64(len("serving\n"))
	})
	if job["state"] != "running" || job["orphan_ttl_sec"] != float64(60) {
		t.Fatalf("job://%s = %v", id, job)
	}
	stopped := runTask(ctx, t, c, nil, map[string]any{"op": "stop", "job_id": id, "grace_ms": 2000})
	if st := stopped["status"].(map[string]any); stopped["ok"] != true || st["state"] != "stopped" || st["signal"] != "terminated" {
		t.Fatalf("stop: %v", stopped)
	}
	status := runTask(ctx, t, c, nil, map[string]any{"op": "status", "job_id": id})
	if status["state"] != "stopped" {
		t.Fatalf("status after stop: %v", status)
	}
	// jobs_status and jobs_stop take the job_id run_task gave, or id
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"jobs_status", map[string]any{"job_id": id}},
		{"jobs_status", map[string]any{"id": id}},
		{"jobs_stop", map[string]any{"job_id": id}},
		{"jobs_wait", map[string]any{"job_id": id}},
	} {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = call.tool, call.args
		res, err := c.CallTool(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("%s %v: %v %v", call.tool, call.args, err, res)
		}
		if job := res.StructuredContent.(map[string]any)["job"].(map[string]any); job["job_id"] != id || job["state"] != "stopped" {
			t.Errorf("%s %v = %v", call.tool, call.args, job)
		}
	}

	if got, _ := os.ReadFile(allowPath); string(got) != allowlist {
		t.Fatalf("the allowlist changed:\n%s", got)
	}
}

// TestNoMCPToolChangesTheAllowlist lists the tools lm mcp exposes: none of
// those that write an allowlist or run an arbitrary command is among them.
func TestNoMCPToolChangesTheAllowlist(t *testing.T) {
	c := startMCPIn(t, t.TempDir(), t.TempDir(), "jobs-test")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
	}
	for _, want := range []string{"list_tasks", "get_task", "get_command", "run_task", "read_allowlist"} {
		if !names[want] {
			t.Errorf("%s is not exposed", want)
		}
	}
	for _, never := range []string{"tasks_allow", "tasks_deny", "tasks_run", "jobs_start", "jobs_supervise"} {
		if names[never] {
			t.Errorf("%s is exposed over MCP", never)
		}
	}
}

// An agent sees only the jobs of its roots: the person's job in another
// project is one it can neither list, read, wait for nor stop, by id or
// prefix, as a tool or a resource; its own project's jobs it can.
func TestAgentSeesOnlyItsRootsJobs(t *testing.T) {
	home, base := t.TempDir(), t.TempDir()
	mine, theirs := filepath.Join(base, "mine"), filepath.Join(base, "theirs")
	for _, d := range []string{mine, theirs} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	start := func(dir string) string {
		cmd := exec.Command("lm", "jobs", "start", "-r", "--jq", ".job.job_id", "--", "sh", "-c", "echo their-secret; sleep 300")
		cmd.Env, cmd.Dir = lmEnv(home), dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("lm jobs start in %s: %v", dir, err)
		}
		id := strings.TrimSpace(string(out))
		t.Cleanup(func() { runLM(t, home, "", "jobs", "stop", id, "--grace", "0s") })
		return id
	}
	other, own := start(theirs), start(mine)

	c := startMCPIn(t, home, mine, "agent")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	call := func(tool string, args map[string]any) (string, bool) {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = tool, args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		raw, _ := json.Marshal(res)
		return string(raw), res.IsError
	}
	if list, _ := call("jobs_list", nil); strings.Contains(list, other) || !strings.Contains(list, own) {
		t.Errorf("jobs_list shows the agent %s", list)
	}
	for _, id := range []string{other, other[:len(other)-4], "…" + other[len(other)-6:]} {
		for _, tool := range []string{"jobs_status", "jobs_logs", "jobs_wait", "jobs_stop"} {
			args := map[string]any{"job_id": id}
			if tool == "jobs_wait" {
				args["timeout"] = "1ms"
			}
			if got, isErr := call(tool, args); !isErr || strings.Contains(got, "their-secret") || !strings.Contains(got, "not_found") {
				t.Errorf("%s %s: %s", tool, id, got)
			}
		}
		if got, isErr := call("run_task", map[string]any{"op": "stop", "job_id": id}); !isErr && !strings.Contains(got, "not_found") {
			t.Errorf("run_task stop %s: %s", id, got)
		}
	}
	req := mcp.ReadResourceRequest{}
	req.Params.URI = "joblog://" + other
	if res, err := c.ReadResource(ctx, req); err == nil {
		t.Errorf("joblog://%s: %v", other, res.Contents)
	}
	if out, _ := runLM(t, home, "", "jobs", "status", other, "-r", "--jq", ".job.state"); strings.TrimSpace(out) != "running" {
		t.Errorf("the person's job after the agent's tries: %s", out)
	}
	if got, isErr := call("jobs_status", map[string]any{"job_id": own}); isErr || !strings.Contains(got, `"running"`) {
		t.Errorf("jobs_status of the agent's own project's job: %s", got)
	}
}
