package jobs

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/duration"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/proc"
	"lmtool.dev/lm/pkg/tasks"
)

// DefaultChunk is the most output one logs call returns.
const DefaultChunk = 64 << 10

// StartInput says what to run and how.
type StartInput struct {
	Command []string `json:"command,omitempty" jsonschema:"a task name and its arguments (a command and its arguments when the project has no such task)"`
	Argv    []string `json:"argv,omitempty" jsonschema:"the words after --: a command, never looked up as a task; after a task name, more of its arguments"`
	Task    string   `json:"task,omitempty" jsonschema:"run this task (the command words are then its arguments)"`
	PTY     bool     `json:"pty,omitempty" jsonschema:"run in a pseudo-terminal (output is merged, lines end in CRLF)"`
	Env     []string `json:"env,omitempty" jsonschema:"environment entries (KEY=VALUE) to add"`
	Cwd     string   `json:"cwd,omitempty" jsonschema:"working directory, under the current directory"`
	TTL     string   `json:"ttl,omitempty" jsonschema:"stop the job this long after it starts (default 30m, 0 = never)"`
	LogSize int64    `json:"log_size,omitempty" jsonschema:"bytes of output kept (default 4 MiB); older output is evicted"`
	Wait    string   `json:"wait,omitempty" jsonschema:"wait up to this long for the job to end and return its output"`
	Follow  bool     `json:"follow,omitempty" jsonschema:"print output chunks as JSON Lines until the job ends"`
}

// StartOutput is the started job, and its output when it ended within the
// wait.
type StartOutput struct {
	Job    Job    `json:"job"`
	Output *Chunk `json:"output,omitempty"`

	waited bool // --wait or --follow: the exit status is the job's
}

// ExitCode is 0 for a job started in the background; after --wait or
// --follow it is the job's own exit status (see Job.ExitStatus), or 7 when
// the wait ended with the job still running.
func (s StartOutput) ExitCode() int {
	switch {
	case !s.waited:
		return 0
	case !s.Job.Terminal():
		return op.KindTimeout.ExitCode()
	}
	return s.Job.ExitStatus()
}

// StartCommand starts a job from a task name or a command. A command after
// -- alone is run as is. Otherwise the first word names a task when the
// project defines one, and the words are the command when it does not.
func StartCommand(ctx context.Context, env *op.Env, in StartInput) (StartOutput, error) {
	root, err := os.Getwd()
	if err != nil {
		return StartOutput{}, err
	}
	spec := Spec{Env: in.Env, PTY: in.PTY, LogSize: in.LogSize, Argv: in.Argv}
	name, args := in.Task, append(append([]string(nil), in.Command...), in.Argv...)
	if name == "" && len(in.Command) > 0 {
		t, err := tasks.Find(root, in.Command[0])
		switch {
		case err == nil:
			name, args = t.Name, args[1:]
		case len(in.Argv) > 0 || op.KindOf(err) == op.KindInvalid:
			return StartOutput{}, err // NAME -- ARGS names a task; or the name is ambiguous
		default:
			spec.Argv = in.Command
		}
	}
	if name != "" {
		t, err := tasks.Find(root, name)
		if err != nil {
			return StartOutput{}, err
		}
		if err := tasks.PersonMayRun(env.Home, t); err != nil {
			return StartOutput{}, err
		}
		if !t.RunnerAvailable {
			return StartOutput{}, tasks.RunnerMissing(t)
		}
		spec.Task, spec.Argv = t.Name, t.WithArgs(args)
	}
	if spec.Dir, err = workDir(env, in.Cwd); err != nil {
		return StartOutput{}, err
	}
	defer spec.Dir.Close()
	if spec.TTL, err = duration.Field("ttl", in.TTL, DefaultTTL); err != nil {
		return StartOutput{}, err
	}
	wait, err := duration.Field("wait", in.Wait, 0)
	if err != nil {
		return StartOutput{}, err
	}
	j, err := Start(ctx, env, spec)
	if err != nil {
		return StartOutput{}, err
	}
	if in.Follow {
		last, err := follow(ctx, env, j.ID, 0, env.Emit)
		if err == nil && last.To > last.From {
			err = env.Emit(last)
		}
		if err != nil {
			return StartOutput{}, err
		}
		j, err = load(ctx, env, j.ID)
		return StartOutput{Job: j, waited: true}, err
	}
	out, err := finishWithin(ctx, env, j, wait)
	out.waited = wait > 0
	return out, err
}

// finishWithin waits up to wait for the job to end; if it does, the result
// carries its exit code and the tail of its output.
func finishWithin(ctx context.Context, env *op.Env, j Job, wait time.Duration) (StartOutput, error) {
	if wait <= 0 {
		return StartOutput{Job: j}, nil
	}
	env.ReportProgress(0, wait.Seconds(), fmt.Sprintf("waiting up to %s for %s to end", wait, j.ID))
	ended, err := waitEnd(ctx, env, j.ID, wait)
	if err != nil {
		// Cut short (Ctrl+C): the job as started, which keeps running.
		return StartOutput{Job: j}, err
	}
	if j = ended; !j.Terminal() {
		return StartOutput{Job: j}, nil
	}
	from := uint64(0)
	if j.BytesEmitted > DefaultChunk {
		from = j.BytesEmitted - DefaultChunk
	}
	c, err := readRing(logPath(env.Home, j.ID), from, DefaultChunk)
	if err != nil {
		return StartOutput{Job: j}, nil
	}
	return StartOutput{Job: j, Output: &c}, nil
}

// IDInput names a job.
type IDInput struct {
	ID    string `json:"id,omitempty" jsonschema:"the job id (or a unique prefix)"`
	JobID string `json:"job_id,omitempty" jsonschema:"the same as id, as run_task and job records spell it"`
}

// Validate takes the job from id or job_id.
func (in *IDInput) Validate() error { return oneID(&in.ID, in.JobID) }

// oneID settles which job a call names: id, or job_id, its spelling in
// run_task and in every job record, so an agent may pass back what it got.
func oneID(id *string, jobID string) error {
	switch {
	case *id == "" && jobID == "":
		return op.Errorf(op.KindInvalid, "name the job: id (or job_id)")
	case *id != "" && jobID != "" && *id != jobID:
		return op.Errorf(op.KindInvalid, "id %q and job_id %q name different jobs: give one", *id, jobID)
	case *id == "":
		*id = jobID
	}
	return nil
}

// StatusOutput is one job.
type StatusOutput struct {
	Job Job `json:"job"`
}

// Status shows a job.
func Status(ctx context.Context, env *op.Env, in IDInput) (StatusOutput, error) {
	j, err := load(ctx, env, in.ID)
	return StatusOutput{Job: j}, err
}

// ListInput filters jobs.
type ListInput struct {
	State string `json:"state,omitempty" jsonschema:"only jobs in this state"`
}

// ListOutput is jobs, oldest first.
type ListOutput struct {
	Jobs []Job `json:"jobs"`
}

// List shows every job.
func List(ctx context.Context, env *op.Env, in ListInput) (ListOutput, error) {
	var stored []Job
	seen := scopeOf(env)
	if err := env.Store.View(ctx, func(tx *bolt.Tx) (err error) { stored, err = visible(tx, seen); return err }); err != nil {
		return ListOutput{}, err
	}
	out := ListOutput{Jobs: []Job{}}
	for _, j := range stored {
		j, err := refresh(ctx, env, j)
		if err != nil {
			return ListOutput{}, err
		}
		if in.State == "" || j.State == in.State {
			out.Jobs = append(out.Jobs, j)
		}
	}
	sort.Slice(out.Jobs, func(a, b int) bool { return out.Jobs[a].ID < out.Jobs[b].ID })
	return out, nil
}

// LogsInput is a read of a job's output.
type LogsInput struct {
	ID       string `json:"id,omitempty" jsonschema:"the job id (or a unique prefix)"`
	JobID    string `json:"job_id,omitempty" jsonschema:"the same as id"`
	From     uint64 `json:"from,omitempty" jsonschema:"the cursor to read from: 0, or the to of the previous read"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"most bytes to return (default 65536)"`
	Wait     string `json:"wait,omitempty" jsonschema:"when nothing new is there yet, wait up to this long for output or the job's end"`
	Follow   bool   `json:"follow,omitempty" jsonschema:"print chunks as JSON Lines until the job ends (CLI)"`
	Tail     int    `json:"tail,omitempty" jsonschema:"start at the last N lines of output instead of from (as tail -n N; with follow, then follow)"`
}

// Validate takes the job from id or job_id.
func (in *LogsInput) Validate() error {
	if in.Tail < 0 || (in.Tail > 0 && in.From > 0) {
		return op.Errorf(op.KindInvalid, "tail wants a number of lines and no from, got tail %d from %d", in.Tail, in.From).
			WithHint("use tail to start at the last lines, or from to continue at a cursor")
	}
	return oneID(&in.ID, in.JobID)
}

// LogsOutput is a chunk of output and where to continue.
type LogsOutput struct {
	JobID string `json:"job_id"`
	Chunk
	State string `json:"state"`
	EOF   bool   `json:"eof" jsonschema:"the job has ended and everything was read"`
}

// Logs reads output from a cursor.
func Logs(ctx context.Context, env *op.Env, in LogsInput) (LogsOutput, error) {
	j, err := load(ctx, env, in.ID)
	if err != nil {
		return LogsOutput{}, err
	}
	if in.Tail > 0 {
		in.From = tailCursor(env, j, in.Tail)
	}
	if in.Follow {
		if env.Emit == nil {
			return LogsOutput{}, op.Errorf(op.KindInvalid, "follow streams JSON Lines on the CLI only").WithHint("use wait with from instead")
		}
		return follow(ctx, env, j.ID, in.From, env.Emit)
	}
	wait, err := duration.Field("wait", in.Wait, 0)
	if err != nil {
		return LogsOutput{}, err
	}
	if wait > 0 {
		if j, err = waitOutput(ctx, env, j.ID, in.From, wait); err != nil {
			return LogsOutput{}, err
		}
	}
	return read(env, j, in.From, in.MaxBytes)
}

// tailCursor is the cursor where the last n lines of the job's output
// begin, looking back at most one chunk; a final line without its newline
// counts as a line.
func tailCursor(env *op.Env, j Job, n int) uint64 {
	from := uint64(0)
	if j.BytesEmitted > DefaultChunk {
		from = j.BytesEmitted - DefaultChunk
	}
	c, err := readRing(logPath(env.Home, j.ID), from, DefaultChunk)
	if err != nil {
		return 0
	}
	data := strings.TrimSuffix(c.Data, "\n")
	for i := len(data) - 1; i >= 0; i-- {
		if data[i] == '\n' {
			if n--; n == 0 {
				return c.From + uint64(i) + 1
			}
		}
	}
	return c.From
}

func read(env *op.Env, j Job, from uint64, max int) (LogsOutput, error) {
	if max <= 0 {
		max = DefaultChunk
	}
	c, err := readRing(logPath(env.Home, j.ID), from, max)
	if os.IsNotExist(err) {
		c, err = Chunk{From: from, To: from}, nil // its supervisor has not created the log yet
	}
	if err != nil {
		return LogsOutput{}, op.Errorf(op.KindInternal, "read output of %s: %w", j.ID, err)
	}
	return LogsOutput{JobID: j.ID, Chunk: c, State: j.State, EOF: j.Terminal() && c.To >= c.Written}, nil
}

// follow emits every chunk from a cursor until the job ends and all its
// output was read, and returns the final chunk (eof) without emitting it.
func follow(ctx context.Context, env *op.Env, id string, from uint64, emit func(any) error) (LogsOutput, error) {
	for {
		j, err := waitOutput(ctx, env, id, from, time.Hour)
		if err != nil {
			return LogsOutput{}, err
		}
		out, err := read(env, j, from, DefaultChunk)
		if err != nil || out.EOF {
			return out, err
		}
		if out.To > out.From || out.Evicted > 0 {
			if err := emit(out); err != nil {
				return out, err
			}
		}
		from = out.To
	}
}

// waitOutput returns once the job has written past cursor or ended, or
// after wait. It sleeps on inotify (the log file) and the store's change
// notification, never polling.
func waitOutput(ctx context.Context, env *op.Env, id string, cursor uint64, wait time.Duration) (Job, error) {
	return waitFor(ctx, env, id, wait, func(j Job) bool { return j.Terminal() || j.BytesEmitted > cursor })
}

// waitEnd returns once the job has ended, or after wait.
func waitEnd(ctx context.Context, env *op.Env, id string, wait time.Duration) (Job, error) {
	return waitFor(ctx, env, id, wait, Job.Terminal)
}

func waitFor(ctx context.Context, env *op.Env, id string, wait time.Duration, done func(Job) bool) (Job, error) {
	changes, cancel, err := env.Store.Watch()
	if err != nil {
		return Job{}, err
	}
	defer cancel()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return Job{}, op.Errorf(op.KindInternal, "watch job output: %w", err)
	}
	defer w.Close()
	j, err := load(ctx, env, id)
	if err != nil {
		return j, err
	}
	watching := false
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	var supervisor supervisorWatch
	defer supervisor.stop()
	for {
		if !watching {
			// The log appears when the supervisor starts.
			watching = w.Add(logPath(env.Home, j.ID)) == nil
		}
		if done(j) {
			return j, nil
		}
		supervisor.watch(j.Supervisor)
		select {
		case <-ctx.Done():
			return j, ctx.Err()
		case <-deadline.C:
			return j, nil
		case <-changes:
		case <-w.Events:
		case <-w.Errors:
		case <-supervisor.ended:
		case <-supervisor.tick:
		}
		if j, err = load(ctx, env, j.ID); err != nil {
			return j, err
		}
	}
}

// supervisorWatch wakes a waiter when the job's supervisor dies: a killed
// supervisor writes nothing, so no other signal would come. It watches a
// pidfd where the kernel has them, so a long wait costs nothing, and else
// ticks once a second for the waiter to look.
type supervisorWatch struct {
	pid    int
	ended  <-chan struct{}
	tick   <-chan time.Time
	cancel func()
}

// watch follows pid, the job's supervisor (0 while none has started).
func (s *supervisorWatch) watch(pid int) {
	if pid == 0 || pid == s.pid {
		return
	}
	s.stop()
	s.pid = pid
	if ended, cancel, ok := proc.Exited(pid); ok {
		s.ended, s.cancel = ended, cancel
		return
	}
	t := time.NewTicker(time.Second)
	s.tick, s.cancel = t.C, t.Stop
}

func (s *supervisorWatch) stop() {
	if s.cancel != nil {
		s.cancel()
	}
	*s = supervisorWatch{}
}

// WaitInput names a job and how long to wait for its end.
type WaitInput struct {
	ID      string `json:"id,omitempty" jsonschema:"the job id (or a unique prefix)"`
	JobID   string `json:"job_id,omitempty" jsonschema:"the same as id"`
	Timeout string `json:"timeout,omitempty" jsonschema:"give up after this long (default: wait as long as it runs)"`
}

// Validate takes the job from id or job_id.
func (in *WaitInput) Validate() error { return oneID(&in.ID, in.JobID) }

// WaitOutput is the job when the wait ended.
type WaitOutput struct {
	Job      Job  `json:"job"`
	TimedOut bool `json:"timed_out"`
}

// ExitCode is the job's own exit status (see Job.ExitStatus), as with
// `timeout` and the shell's `wait`, or 7 when it was still running at the
// timeout.
func (w WaitOutput) ExitCode() int {
	if w.TimedOut {
		return op.KindTimeout.ExitCode()
	}
	return w.Job.ExitStatus()
}

// Wait blocks until a job ends.
func Wait(ctx context.Context, env *op.Env, in WaitInput) (WaitOutput, error) {
	timeout, err := duration.Field("timeout", in.Timeout, 100*365*24*time.Hour)
	if err != nil {
		return WaitOutput{}, err
	}
	env.ReportProgress(0, 0, fmt.Sprintf("waiting for %s to end", in.ID))
	j, err := waitEnd(ctx, env, in.ID, timeout)
	return WaitOutput{Job: j, TimedOut: err == nil && !j.Terminal()}, err
}

// StopInput names a job and its grace period.
type StopInput struct {
	ID    string `json:"id,omitempty" jsonschema:"the job id (or a unique prefix)"`
	JobID string `json:"job_id,omitempty" jsonschema:"the same as id, as run_task spells it"`
	Grace string `json:"grace,omitempty" jsonschema:"time between SIGTERM and SIGKILL (default 5s)"`
}

// Validate takes the job from id or job_id.
func (in *StopInput) Validate() error { return oneID(&in.ID, in.JobID) }

// Stop ends a job: SIGTERM to every process in its cgroup (or its process
// group), SIGKILL after the grace period. A queued job is stopped without running.
func Stop(ctx context.Context, env *op.Env, in StopInput) (StatusOutput, error) {
	grace, err := duration.Field("grace", in.Grace, DefaultGrace)
	if err != nil {
		return StatusOutput{}, err
	}
	j, err := stop(ctx, env, in.ID, grace)
	return StatusOutput{Job: j}, err
}

func stop(ctx context.Context, env *op.Env, id string, grace time.Duration) (Job, error) {
	var j Job
	in := scopeOf(env)
	err := env.Store.Update(ctx, func(tx *bolt.Tx) error {
		var err error
		if j, err = resolve(tx, in, id); err != nil || j.Terminal() {
			return err
		}
		now := env.Now().UTC()
		if j.StopAt == nil {
			j.StopAt, j.StopReason = &now, "stop requested"
		}
		if j.State == Queued {
			j.State, j.FinishedAt = Stopped, &now
		}
		return put(tx, j)
	})
	if err != nil || j.Terminal() {
		return j, err
	}
	if j.PID == 0 {
		// Still starting: the supervisor signals it once it has a pid.
		return waitEnd(ctx, env, j.ID, grace+5*time.Second)
	}
	j.signal(syscall.SIGTERM)
	if j, err = waitEnd(ctx, env, j.ID, grace); err != nil || j.Terminal() {
		return j, err
	}
	j.signal(syscall.SIGKILL)
	return waitEnd(ctx, env, j.ID, 10*time.Second)
}

// PruneInput selects finished jobs to delete.
type PruneInput struct {
	OlderThan string `json:"older_than,omitempty" jsonschema:"only jobs that finished longer ago than this duration (e.g. 36h, 7d, 2w)"`
}

// PruneOutput lists what was deleted.
type PruneOutput struct {
	Removed []string `json:"removed"`
}

// Prune deletes finished jobs and their output.
func Prune(ctx context.Context, env *op.Env, in PruneInput) (PruneOutput, error) {
	age, err := duration.Field("older_than", in.OlderThan, 0)
	if err != nil {
		return PruneOutput{}, err
	}
	cutoff := env.Now().Add(-age)
	removed, err := removeFinished(ctx, env, func(j Job, _ int) bool { return !j.FinishedAt.After(cutoff) })
	if removed == nil {
		removed = []string{}
	}
	return PruneOutput{Removed: removed}, err
}
