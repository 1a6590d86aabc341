package jobs

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"lmtool.dev/lm/pkg/confine"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/tasks"
)

// RunTaskInput is spec 003's run_task arguments.
type RunTaskInput struct {
	Op           string            `json:"op" jsonschema:"start, status or stop"`
	Task         string            `json:"task,omitempty" jsonschema:"start: the task's unique or source name"`
	Args         []string          `json:"args,omitempty" jsonschema:"start: arguments passed to the task as separate words"`
	Stream       bool              `json:"stream,omitempty" jsonschema:"start: send logging notifications with the output as it arrives"`
	Env          map[string]string `json:"env,omitempty" jsonschema:"start: environment variables to add"`
	Cwd          string            `json:"cwd,omitempty" jsonschema:"start: working directory under the project root (default the root)"`
	OrphanTTLSec *int64            `json:"orphan_ttl_sec,omitempty" jsonschema:"start: stop the job this many seconds after it starts (default 1800, 0 = never)"`
	WaitMS       int64             `json:"wait_ms,omitempty" jsonschema:"start: wait up to this long for the job to end and return its output"`
	JobID        string            `json:"job_id,omitempty" jsonschema:"status, stop: the job"`
	GraceMS      *int64            `json:"grace_ms,omitempty" jsonschema:"stop: milliseconds between SIGTERM and SIGKILL (default 5000)"`
}

// Validate checks that each op has what it needs.
func (in RunTaskInput) Validate() error {
	switch {
	case in.Op == "start" && in.Task == "":
		return op.Errorf(op.KindInvalid, "op start needs task")
	case in.Op != "start" && in.JobID == "":
		return op.Errorf(op.KindInvalid, "op %s needs job_id", in.Op)
	case in.OrphanTTLSec != nil && *in.OrphanTTLSec < 0, in.GraceMS != nil && *in.GraceMS < 0, in.WaitMS < 0:
		return op.Errorf(op.KindInvalid, "durations cannot be negative")
	}
	return nil
}

// RunTaskOutput is spec 003's run_task result: ok with the job, or, for a
// task the MCP allowlist does not allow, ok false with code NotAllowlisted.
type RunTaskOutput struct {
	OK     bool   `json:"ok"`
	Code   string `json:"code,omitempty" jsonschema:"why nothing ran, when ok is false: NotAllowlisted"`
	Hint   string `json:"hint,omitempty" jsonschema:"what to do instead, when ok is false"`
	Error  string `json:"error,omitempty" jsonschema:"which task was refused and why, when ok is false"`
	JobID  string `json:"job_id,omitempty"`
	State  string `json:"state,omitempty"`
	Status *Job   `json:"status,omitempty"`
	Output *Chunk `json:"output,omitempty" jsonschema:"the tail of the output, when the job ended within wait_ms"`
}

// NotAllowlisted is the code of a start the MCP allowlist refused.
const NotAllowlisted = "NotAllowlisted"

// ExitCode makes a refused start exit 5 (denied) on the CLI.
func (r RunTaskOutput) ExitCode() int {
	if r.Code == NotAllowlisted {
		return op.KindDenied.ExitCode()
	}
	return 0
}

// notAllowlisted is returned by startTask for a task the MCP allowlist
// does not allow; RunTask turns it into spec 003's refusal.
type notAllowlisted struct{ task tasks.Task }

func (e notAllowlisted) Error() string {
	return fmt.Sprintf("task %s (%s in %s) is not allowlisted for MCP", e.task.Name, e.task.SourceName, e.task.FilePath)
}

// RunTask is the MCP face of jobs: start checks the MCP allowlist.
func RunTask(ctx context.Context, env *op.Env, in RunTaskInput) (RunTaskOutput, error) {
	var j Job
	var out *Chunk
	var err error
	switch in.Op {
	case "start":
		j, out, err = startTask(ctx, env, in)
	case "status":
		j, err = load(ctx, env, in.JobID)
	case "stop":
		grace := DefaultGrace
		if in.GraceMS != nil {
			grace = time.Duration(*in.GraceMS) * time.Millisecond
		}
		j, err = stop(ctx, env, in.JobID, grace)
	}
	var refused notAllowlisted
	if errors.As(err, &refused) {
		return RunTaskOutput{Code: NotAllowlisted, Error: refused.Error(),
			Hint: fmt.Sprintf("Ask a human to grant MCP access to this task (lm tasks allow %s).", refused.task.Name)}, nil
	}
	if err != nil {
		return RunTaskOutput{}, err
	}
	return RunTaskOutput{OK: true, JobID: j.ID, State: j.State, Status: &j, Output: out}, nil
}

func startTask(ctx context.Context, env *op.Env, in RunTaskInput) (Job, *Chunk, error) {
	t, _, err := tasks.FindFor(env, "", in.Task)
	if err != nil {
		return Job{}, nil, err
	}
	allow, _, err := tasks.LoadAllowlist(tasks.AllowlistPath(env.Home, tasks.NamespaceMCP))
	if err != nil {
		return Job{}, nil, err
	}
	verdict, entry := allow.Match(t)
	if verdict != tasks.Allowed {
		return Job{}, nil, notAllowlisted{t}
	}
	if !t.RunnerAvailable {
		return Job{}, nil, tasks.RunnerMissing(t)
	}
	spec := Spec{Task: t.Name, Argv: t.WithArgs(in.Args), TTL: DefaultTTL}
	if spec.Dir, err = workDir(env, in.Cwd); err != nil {
		return Job{}, nil, err
	}
	defer spec.Dir.Close()
	if !env.Caller.IsPerson() {
		dir, err := confine.RealPath(spec.Dir)
		if err != nil {
			return Job{}, nil, op.Errorf(op.KindInternal, "locate the working directory: %w", err)
		}
		if err := tasks.AgentMayRun(t, entry, tasks.Extras{Args: in.Args, Env: in.Env, Dir: dir}); err != nil {
			return Job{}, nil, err
		}
	}
	if in.OrphanTTLSec != nil {
		spec.TTL = time.Duration(*in.OrphanTTLSec) * time.Second
	}
	for _, k := range sortedKeys(in.Env) {
		spec.Env = append(spec.Env, k+"="+in.Env[k])
	}
	j, err := Start(ctx, env, spec)
	if err != nil {
		return Job{}, nil, err
	}
	streamed := make(chan struct{})
	if in.Stream && env.Log != nil {
		go func() {
			defer close(streamed)
			stream(context.WithoutCancel(ctx), env, j.ID)
		}()
	} else {
		close(streamed)
	}
	if in.WaitMS > 0 {
		res, err := finishWithin(ctx, env, j, time.Duration(in.WaitMS)*time.Millisecond)
		if err == nil && res.Job.Terminal() {
			// The job ended within the wait: let its last output go out as
			// notifications before the result, as a client expects.
			select {
			case <-streamed:
			case <-time.After(streamFlushGrace):
			}
		}
		return res.Job, res.Output, err
	}
	return j, nil, nil
}

// streamFlushGrace bounds how long a result waits for the notifications of
// a job that has already ended.
const streamFlushGrace = 2 * time.Second

// maxNotification is the most output one logging notification carries.
const maxNotification = 8 << 10

// stream sends the job's output as logging notifications until it ends.
// Notifications are best effort (a client that reads slowly may miss
// some); the joblog resource and jobs_logs are the exact record.
func stream(ctx context.Context, env *op.Env, id string) {
	var from uint64
	for {
		j, err := waitOutput(ctx, env, id, from, time.Hour)
		if err != nil {
			return
		}
		out, err := read(env, j, from, maxNotification)
		if err != nil {
			return
		}
		if out.To > out.From {
			env.Log("info", map[string]any{"job_id": id, "chunk": out.Data, "from": out.From, "to": out.To})
			env.ReportProgress(float64(out.To), 0, "bytes of output")
		}
		if out.EOF {
			env.Log("info", map[string]any{"job_id": id, "state": j.State, "exit_code": j.ExitCode, "eof": true})
			return
		}
		from = out.To
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
