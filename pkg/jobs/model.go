// Package jobs runs commands and tasks as supervised background jobs. Each
// job is owned by its own supervisor process (`lm jobs supervise`, started
// from the same executable), not by the CLI or MCP server that started it,
// so it outlives them. The supervisor captures output into a ring file,
// Jobs every state change in the store, enforces the orphan TTL and
// stops the whole process group.
package jobs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/confine"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/proc"
	"lmtool.dev/lm/pkg/store"
)

// The states of a job.
const (
	Queued  = "queued"  // waiting for a free slot
	Running = "running" // the child is running
	Exited  = "exited"  // the child exited 0
	Failed  = "failed"  // non-zero exit, a signal, or it could not start
	Stopped = "stopped" // stopped on request or at its TTL
)

// jobsBucket holds every job by id.
var jobsBucket = store.JSON[Job]("jobs.Jobs", store.AnyKey, nil)

// Job is a job's stored Job; its JSON is spec 003's JobStatusDto plus
// what it ran and how.
type Job struct {
	ID           string     `json:"job_id"`
	State        string     `json:"state" jsonschema:"queued, running, exited, failed or stopped"`
	Task         string     `json:"task,omitempty" jsonschema:"the task's unique name, when started from a task"`
	Argv         []string   `json:"argv"`
	Dir          string     `json:"cwd"`
	Env          []string   `json:"env,omitempty"`
	PTY          bool       `json:"pty"`
	CreatedAt    time.Time  `json:"created_at"`
	StartedAt    *time.Time `json:"started_at,omitempty"`
	FinishedAt   *time.Time `json:"finished_at,omitempty"`
	ExitCode     *int       `json:"exit_code,omitempty"`
	Signal       string     `json:"signal,omitempty" jsonschema:"the signal that ended the child, if one did"`
	Error        string     `json:"error,omitempty" jsonschema:"why the job failed without an exit code"`
	BytesEmitted uint64     `json:"bytes_emitted"`
	Truncated    bool       `json:"truncated" jsonschema:"older output was evicted from the ring buffer"`
	LogSize      int64      `json:"log_size"`
	TTLSeconds   int64      `json:"orphan_ttl_sec" jsonschema:"the job is stopped this long after it starts; 0 means never"`
	MaxRunning   int        `json:"max_running" jsonschema:"the concurrency limit the job was started under"`
	PID          int        `json:"pid,omitempty"`
	Supervisor   int        `json:"supervisor_pid,omitempty"`
	Boot         string     `json:"boot_id,omitempty" jsonschema:"the machine's boot the job ran in: after a reboot nothing of it runs, whatever now has its pids"`
	Containment  string     `json:"containment,omitempty" jsonschema:"how lm holds every process of the job, to end them all: cgroup (a cgroup v2 of its own, which no fork, setsid or daemon leaves) or recorded (its process group and the processes its supervisor records)"`
	Cgroup       string     `json:"cgroup,omitempty" jsonschema:"the job's cgroup directory (removed when the job ends)"`
	StopAt       *time.Time `json:"stop_requested_at,omitempty"`
	StopReason   string     `json:"stop_reason,omitempty"`
}

// sameBoot reports whether the job ran in this boot of the machine (a
// record from before boot ids were kept is taken to have).
func (j Job) sameBoot() bool { return j.Boot == "" || j.Boot == proc.BootID() }

// supervisorGone reports whether the job's supervisor no longer runs: its
// pid is free, or the machine rebooted since (when the pid may be anyone's).
func (j Job) supervisorGone() bool {
	return j.Supervisor != 0 && (!j.sameBoot() || !proc.Running(j.Supervisor))
}

// Terminal reports whether the job has ended.
func (j Job) Terminal() bool { return j.State == Exited || j.State == Failed || j.State == Stopped }

// ExitStatus is the job's status as a shell reports a command's: its exit
// code, 128+N when signal N ended it, 143 (128+SIGTERM) when it was stopped
// before it ran, and 1 when it could not start. A job still running has
// none yet: 0.
func (j Job) ExitStatus() int {
	switch {
	case !j.Terminal() || j.State == Exited:
		return 0
	case j.ExitCode != nil:
		return *j.ExitCode
	case j.Signal != "":
		for n := syscall.Signal(1); n < 65; n++ {
			if n.String() == j.Signal {
				return 128 + int(n)
			}
		}
	case j.State == Stopped:
		return 128 + int(syscall.SIGTERM)
	}
	return 1
}

// dir is where a job's files live.
func jobDir(home, id string) string  { return filepath.Join(home, "jobs", id) }
func logPath(home, id string) string { return filepath.Join(jobDir(home, id), "output.ring") }

func get(tx *bolt.Tx, id string) (Job, bool, error) {
	return jobsBucket.Get(tx, []byte(id))
}

func put(tx *bolt.Tx, r Job) error { return jobsBucket.Put(tx, []byte(r.ID), r) }

func all(tx *bolt.Tx) ([]Job, error) {
	var out []Job
	err := jobsBucket.ForEach(tx, func(_ []byte, j Job) error {
		out = append(out, j)
		return nil
	})
	return out, err
}

// A scope is the jobs a caller may see: the person every job, anyone else
// only those whose working directory lies beneath its roots, so that an
// agent neither reads another project's output nor stops its jobs. A job
// out of scope is one that does not exist.
type scope func(Job) bool

func scopeOf(env *op.Env) scope {
	if env.Caller.IsPerson() {
		return func(Job) bool { return true }
	}
	var roots []string
	for _, dir := range env.Roots {
		if r, err := confine.Open(dir); err == nil {
			roots = append(roots, r.Dir) // its real path, as a job's Dir is
			r.Close()
		}
	}
	return func(j Job) bool {
		for _, root := range roots {
			if j.Dir == root || strings.HasPrefix(j.Dir, strings.TrimSuffix(root, "/")+"/") {
				return true
			}
		}
		return false
	}
}

// visible is the jobs in scope.
func visible(tx *bolt.Tx, in scope) ([]Job, error) {
	jobs, err := all(tx)
	return slices.DeleteFunc(jobs, func(j Job) bool { return !in(j) }), err
}

// resolve finds a job in scope by id or unique id prefix (with or without
// "j_").
func resolve(tx *bolt.Tx, in scope, idOrPrefix string) (Job, error) {
	want := strings.ToUpper(strings.TrimPrefix(strings.TrimSpace(idOrPrefix), "j_"))
	if want == "" {
		return Job{}, op.Errorf(op.KindInvalid, "job id is empty")
	}
	if r, ok, err := get(tx, "j_"+want); (ok && in(r)) || err != nil {
		return r, err
	}
	jobs, err := visible(tx, in)
	if err != nil {
		return Job{}, err
	}
	// A unique prefix, or a unique tail: what tables show ("…M1N2") for
	// ids made in one burst, which share most of their characters.
	tail, tailOnly := strings.CutPrefix(strings.Replace(want, "...", "…", 1), "…")
	var matches []Job
	for _, r := range jobs {
		if !tailOnly && strings.HasPrefix(strings.TrimPrefix(r.ID, "j_"), want) {
			matches = append(matches, r)
		}
	}
	if len(matches) == 0 {
		for _, r := range jobs {
			if strings.HasSuffix(r.ID, tail) {
				matches = append(matches, r)
			}
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return Job{}, op.Errorf(op.KindNotFound, "no job %q", idOrPrefix).WithCategory("job_not_found").WithHint("see 'lm jobs list'")
	}
	var ids []string
	for _, m := range matches {
		ids = append(ids, m.ID)
	}
	sort.Strings(ids)
	return Job{}, op.Errorf(op.KindInvalid, "job id prefix %q is ambiguous: %s", idOrPrefix, strings.Join(ids, ", "))
}

// load reads a job and fills in what only the filesystem knows: the live
// output count, and whether a job Jobed as live lost its supervisor.
func load(ctx context.Context, env *op.Env, id string) (Job, error) {
	var j Job
	err := env.Store.View(ctx, func(tx *bolt.Tx) error {
		var err error
		j, err = resolve(tx, scopeOf(env), id)
		return err
	})
	if err != nil {
		return Job{}, err
	}
	return refresh(ctx, env, j)
}

func refresh(ctx context.Context, env *op.Env, j Job) (Job, error) {
	if j.Terminal() {
		return j, nil
	}
	if f, err := os.Open(logPath(env.Home, j.ID)); err == nil {
		if capacity, written, err := ringState(f); err == nil {
			j.BytesEmitted, j.Truncated = written, written > capacity
		}
		f.Close()
	}
	if j.supervisorGone() {
		return markLost(ctx, env, j.ID)
	}
	return j, nil
}

// markLost Jobs that a job's supervisor died (killed with SIGKILL, or
// the machine rebooted): nothing will ever update the job again.
func markLost(ctx context.Context, env *op.Env, id string) (Job, error) {
	var out Job
	err := env.Store.Update(ctx, func(tx *bolt.Tx) error {
		r, ok, err := get(tx, id)
		if err != nil {
			return err
		}
		if !ok {
			return op.Errorf(op.KindNotFound, "no job %q", id)
		}
		if !r.Terminal() && r.supervisorGone() {
			now := env.Now().UTC()
			r.State, r.FinishedAt = Failed, &now
			r.Error = fmt.Sprintf("its supervisor (pid %d) is gone", r.Supervisor)
			// Leave nothing of the job running unobserved: its cgroup, its
			// process group, and what the supervisor recorded of those that
			// left it (none after a reboot, when its pids may name anyone's
			// processes).
			r.signal(syscall.SIGKILL)
			if r.sameBoot() {
				endRecorded(env.Home, r.ID)
			}
			if err := put(tx, r); err != nil {
				return err
			}
		}
		out = r
		return nil
	})
	if err == nil && out.State == Failed {
		out.removeCgroup()
	}
	return out, err
}
