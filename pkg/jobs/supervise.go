package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/creack/pty"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"lmtool.dev/lm/pkg/cgroup"
	"lmtool.dev/lm/pkg/guard"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/proc"
)

// DefaultGrace is how long a stopped job gets between SIGTERM and SIGKILL.
const DefaultGrace = 5 * time.Second

// SuperviseInput names the job a supervisor owns.
type SuperviseInput struct {
	ID string `json:"id" jsonschema:"the job to supervise"`
}

// SuperviseOutput is the job as it ended.
type SuperviseOutput struct {
	Job Job `json:"job"`
}

// Supervise is the supervisor process's whole life: wait for a slot, run
// the child in its own process group with output into the ring, record the
// result. `lm jobs start` runs it detached; nobody else should.
func Supervise(ctx context.Context, env *op.Env, in SuperviseInput) (SuperviseOutput, error) {
	var j Job
	if err := env.Store.View(ctx, func(tx *bolt.Tx) error {
		var ok bool
		var err error
		if j, ok, err = get(tx, in.ID); !ok && err == nil {
			return op.Errorf(op.KindNotFound, "no job %q", in.ID)
		}
		return err
	}); err != nil {
		return SuperviseOutput{}, err
	}
	ring, err := createRing(logPath(env.Home, j.ID), j.LogSize)
	if err != nil {
		return SuperviseOutput{}, fail(ctx, env, j.ID, fmt.Sprintf("create log: %v", err))
	}
	defer ring.Close()
	// Orphaned descendants are re-parented to the supervisor, which reaps
	// them before it records the end: no zombies, whatever init does.
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	log := slog.New(slog.NewTextHandler(env.Stderr, nil))
	claimed, err := claimSlot(ctx, env, j.ID)
	if err != nil || !claimed {
		return SuperviseOutput{}, err
	}
	// The cgroup is recorded before anything runs in it, so that whoever
	// finds this supervisor killed can end what it started.
	group := newCgroup(env, log, j.ID)
	if group != nil {
		j.Containment, j.Cgroup = InCgroup, group.Dir
		if err := update(ctx, env, j.ID, func(r *Job) { r.Containment, r.Cgroup = j.Containment, j.Cgroup }); err != nil {
			group.Remove(0)
			return SuperviseOutput{}, err
		}
	}
	child, output, err := startChild(env, j, group)
	if err != nil && group != nil {
		// The kernel may refuse to start a child in a cgroup (clone3
		// filtered, or older than CLONE_INTO_CGROUP): try without. A
		// command that cannot start at all fails the same way again.
		log.Info("the job did not start in its cgroup: trying without, recording its processes instead", "reason", err)
		group.Remove(0)
		group = nil
		child, output, err = startChild(env, j, nil)
	}
	if group == nil {
		j.Containment, j.Cgroup = Recorded, ""
	}
	if err != nil {
		return SuperviseOutput{}, fail(ctx, env, j.ID, err.Error())
	}
	j.PID = child.Process.Pid
	var stopAt *time.Time
	err = update(ctx, env, j.ID, func(r *Job) {
		r.PID, r.Containment, r.Cgroup, stopAt = j.PID, j.Containment, j.Cgroup, r.StopAt
	})
	if err != nil || stopAt != nil {
		terminate(j, DefaultGrace, nil) // stopped while it was starting
	}

	// The supervisor outlives a panic in its helpers: the child it watches
	// is still to be waited for, recorded and ended.
	copied := make(chan struct{})
	guard.Go(log, "copying the job's output", func() {
		defer close(copied)
		copyOutput(ring, output)
	})
	exited := make(chan struct{})
	recorded := make(chan struct{})
	if group == nil {
		guard.Go(log, "recording the job's processes", func() {
			defer close(recorded)
			recordDescendants(env.Home, j.ID, exited)
		})
	} else {
		close(recorded)
	}
	guard.Go(log, "enforcing the job's stop and TTL", func() {
		select {
		case <-exited:
		case <-ctx.Done(): // the supervisor itself was told to stop
			requestStop(env, j.ID, "the supervisor was signalled")
			terminate(j, DefaultGrace, exited)
		case <-ttl(j):
			requestStop(env, j.ID, fmt.Sprintf("its orphan TTL of %ds ran out", j.TTLSeconds))
			terminate(j, DefaultGrace, exited)
		}
	})
	waitErr := child.Wait()
	close(exited)
	<-recorded
	// Whatever the child left behind is an orphan now.
	j.signal(syscall.SIGKILL)
	endDescendants(2 * time.Second)
	j.removeCgroup()
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
		// A descendant that would not die still holds the output open.
		output.Close()
	}

	var final Job
	err = update(context.WithoutCancel(ctx), env, j.ID, func(j *Job) {
		now := env.Now().UTC()
		j.FinishedAt = &now
		j.BytesEmitted, j.Truncated = ring.written, ring.written > ring.capacity
		code, signal := exitStatus(child.ProcessState, waitErr)
		j.ExitCode, j.Signal = code, signal
		switch {
		case j.StopAt != nil:
			j.State = Stopped
		case code != nil && *code == 0:
			j.State = Exited
		default:
			j.State = Failed
		}
		final = *j
	})
	return SuperviseOutput{Job: final}, err
}

// launchGrace is how long a queued job whose supervisor has not yet
// registered still holds its place in line; past it, the process that
// started it died before launching the supervisor.
const launchGrace = 10 * time.Second

// claimSlot waits until the running jobs and the older queued ones leave
// room under the job's limit, so queued jobs start strictly oldest first,
// and marks it running; false means it was stopped while queued.
func claimSlot(ctx context.Context, env *op.Env, id string) (bool, error) {
	changes, cancel, err := env.Store.Watch()
	if err != nil {
		return false, err
	}
	defer cancel()
	for {
		claimed, queued := false, false
		err := env.Store.Update(ctx, func(tx *bolt.Tx) error {
			j, ok, err := get(tx, id)
			if err != nil {
				return err
			}
			if !ok {
				return op.Errorf(op.KindNotFound, "job %s vanished", id)
			}
			if j.State != Queued {
				return nil
			}
			now := env.Now().UTC()
			ahead := 0
			others, err := all(tx)
			if err != nil {
				return err
			}
			for _, o := range others {
				switch {
				case o.ID == id:
				case o.State == Running && (o.Supervisor == 0 || proc.Running(o.Supervisor)):
					ahead++
				case o.State == Queued && olderThan(o, j) && waiting(o, now):
					ahead++
				}
			}
			if j.MaxRunning > 0 && ahead >= j.MaxRunning {
				queued = true
				if j.Supervisor == 0 {
					// Registered, a dead supervisor no longer holds the
					// job's place in line, and readers mark the job failed.
					j.Supervisor, j.Boot = os.Getpid(), proc.BootID()
					return put(tx, j)
				}
				return nil
			}
			j.State, j.StartedAt, j.Supervisor, j.Boot = Running, &now, os.Getpid(), proc.BootID()
			claimed = true
			return put(tx, j)
		})
		if err != nil || !queued {
			return claimed, err
		}
		select {
		case <-changes:
		case <-ctx.Done():
			return false, update(context.WithoutCancel(ctx), env, id, func(j *Job) {
				now := env.Now().UTC()
				j.State, j.FinishedAt, j.StopReason = Stopped, &now, "the supervisor was signalled while queued"
			})
		}
	}
}

func olderThan(a, b Job) bool {
	return a.CreatedAt.Before(b.CreatedAt) || a.CreatedAt.Equal(b.CreatedAt) && a.ID < b.ID
}

// waiting reports whether a queued job is still in line: its supervisor is
// alive, or it is being launched.
func waiting(j Job, now time.Time) bool {
	if j.Supervisor != 0 {
		return proc.Running(j.Supervisor)
	}
	return now.Sub(j.CreatedAt) < launchGrace
}

// startChild starts the command with stdin closed, in a new process group
// (or a new session with a controlling pty) and in group when there is one,
// and returns its output.
// The child inherits the supervisor's environment (the one lm jobs start
// was given) plus the job's own variables, and the supervisor's working
// directory: the one its starter opened and checked (j.Dir is that
// directory's path, for people to read).
func startChild(env *op.Env, j Job, group *cgroup.Group) (*exec.Cmd, io.ReadCloser, error) {
	cmd := exec.Command(j.Argv[0], j.Argv[1:]...)
	cmd.Env = op.ChildEnv(env.Environ, j.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if group != nil {
		// The child begins life in the cgroup, before it can fork.
		dir, err := group.Open()
		if err != nil {
			return nil, nil, fmt.Errorf("open cgroup: %w", err)
		}
		defer dir.Close()
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(dir.Fd())
	}
	if j.PTY {
		f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 120})
		if err != nil {
			return nil, nil, fmt.Errorf("start %s: %w", j.Argv[0], err)
		}
		return cmd, f, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stdout, cmd.Stderr = w, w // one stream, interleaved as written
	cmd.SysProcAttr.Setpgid = true
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("start %s: %w", j.Argv[0], err)
	}
	return cmd, r, nil
}

// endDescendants kills and reaps what the job left behind, for up to
// limit. As the child subreaper the supervisor inherits every orphaned
// descendant, also those that left the job's process group (setsid,
// daemons), so killing its own children until none is left reaches them
// all: the children of one it kills are re-parented to it in turn.
func endDescendants(limit time.Duration) {
	deadline := time.Now().Add(limit)
	for {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err != nil {
				return // ECHILD: none left
			}
			if pid == 0 {
				break // some still run
			}
		}
		if time.Now().After(deadline) {
			return
		}
		for _, p := range proc.All() {
			if p.PPID == os.Getpid() {
				syscall.Kill(p.PID, syscall.SIGKILL)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// copyOutput moves output into the ring until the writers are gone. A pty
// reports their end as EIO rather than EOF.
func copyOutput(ring *ringWriter, output io.Reader) {
	buf := make([]byte, 256<<10)
	for {
		n, err := output.Read(buf)
		if n > 0 {
			if _, werr := ring.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // io.EOF, EIO from a pty, or the reader closed
		}
	}
}

// terminate sends SIGTERM to the job's processes, then SIGKILL after grace
// unless done closes first.
func terminate(j Job, grace time.Duration, done <-chan struct{}) {
	j.signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		j.signal(syscall.SIGKILL)
	}
}

func ttl(j Job) <-chan time.Time {
	if j.TTLSeconds <= 0 {
		return nil
	}
	return time.After(time.Duration(j.TTLSeconds) * time.Second)
}

func requestStop(env *op.Env, id, reason string) {
	update(context.Background(), env, id, func(j *Job) {
		if j.StopAt == nil {
			now := env.Now().UTC()
			j.StopAt, j.StopReason = &now, reason
		}
	})
}

// exitStatus is the child's exit code, or the signal that ended it.
func exitStatus(ps *os.ProcessState, err error) (*int, string) {
	if ps == nil {
		return nil, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return nil, ws.Signal().String()
	}
	code := ps.ExitCode()
	return &code, ""
}

// update changes one job in one transaction.
func update(ctx context.Context, env *op.Env, id string, change func(*Job)) error {
	return env.Store.Update(ctx, func(tx *bolt.Tx) error {
		j, ok, err := get(tx, id)
		if err != nil {
			return err
		}
		if !ok {
			return op.Errorf(op.KindNotFound, "no job %q", id)
		}
		change(&j)
		return put(tx, j)
	})
}

// fail records a job that could not run.
func fail(ctx context.Context, env *op.Env, id, reason string) error {
	err := update(context.WithoutCancel(ctx), env, id, func(j *Job) {
		now := env.Now().UTC()
		j.State, j.FinishedAt, j.Error = Failed, &now, reason
	})
	return errors.Join(op.Errorf(op.KindInternal, "%s", reason), err)
}
