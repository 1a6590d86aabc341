package jobs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/oklog/ulid/v2"
	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/config"
	"lmtool.dev/lm/pkg/confine"
	"lmtool.dev/lm/pkg/op"
)

// DefaultTTL is the orphan TTL when none is given (spec 003: detach with a
// TTL of 30 minutes).
const DefaultTTL = 30 * time.Minute

// DefaultMaxRunning is the concurrency limit unless max_running in the
// [jobs] table of config.toml, or LM_JOBS_MAX_RUNNING, sets another.
const DefaultMaxRunning = 8

// Spec is what to run.
type Spec struct {
	Task string // the task's unique name, when Argv came from a task
	Argv []string
	// Dir is the working directory: the supervisor starts in it (through
	// its descriptor, so the directory checked is the one the job gets) and
	// the job inherits it. Its path is recorded for people to read.
	Dir     *os.File
	Env     []string // KEY=VALUE added to the environment
	PTY     bool
	TTL     time.Duration
	LogSize int64
}

// Start records a queued job and launches its supervisor, detached in its
// own session with stdin closed, so the job outlives this process and never
// reads an MCP server's stdio.
func Start(ctx context.Context, env *op.Env, spec Spec) (Job, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return Job{}, op.Errorf(op.KindInvalid, "nothing to run").WithHint("give a task name or a command after --")
	}
	for _, kv := range spec.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return Job{}, op.Errorf(op.KindInvalid, "environment entry %q is not KEY=VALUE", kv)
		}
	}
	if spec.Dir == nil {
		return Job{}, op.Errorf(op.KindInternal, "a job needs its working directory open")
	}
	dirPath, err := confine.RealPath(spec.Dir)
	if err != nil {
		return Job{}, op.Errorf(op.KindInternal, "locate the working directory: %w", err)
	}
	if spec.LogSize == 0 {
		spec.LogSize = DefaultLogSize
	}
	if spec.LogSize < 4096 || spec.LogSize > 1<<30 {
		return Job{}, op.Errorf(op.KindInvalid, "log size %d is out of range", spec.LogSize).WithHint("use 4096 to 1073741824 bytes")
	}
	if _, err := cgroupsWanted(env); err != nil {
		return Job{}, err
	}
	settings, err := settingsOf(env.Home)
	if err != nil {
		return Job{}, err
	}
	limit, err := maxRunning(env, settings)
	if err != nil {
		return Job{}, err
	}
	keep, err := settings.retention(env.Home)
	if err != nil {
		return Job{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return Job{}, op.Errorf(op.KindInternal, "find lm's executable: %w", err)
	}
	j := Job{
		ID: "j_" + ulid.Make().String(), State: Queued, Task: spec.Task,
		Argv: spec.Argv, Env: spec.Env, PTY: spec.PTY,
		CreatedAt: env.Now().UTC(), LogSize: spec.LogSize,
		TTLSeconds: int64(spec.TTL / time.Second), MaxRunning: limit, Dir: dirPath,
	}
	dir := jobDir(env.Home, j.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Job{}, op.Errorf(op.KindInternal, "create %s: %w", dir, err)
	}
	// Recording a job also lets go of the finished ones past [jobs]
	// keep_for and keep_finished, so a machine that runs jobs every day
	// does not keep them forever.
	// Cleanup never decides whether a job starts: an old record that
	// cannot be read leaves the others in place (it deletes nothing before
	// reading them all) and the new job is recorded regardless.
	var expired []string
	if err := env.Store.Update(ctx, func(tx *bolt.Tx) error {
		expired, _ = dropFinished(tx, keep.expired(env.Now()))
		return put(tx, j)
	}); err != nil {
		os.RemoveAll(dir)
		return Job{}, err
	}
	removeOutput(env.Home, expired)
	logf, err := os.OpenFile(filepath.Join(dir, "supervisor.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return Job{}, fail(ctx, env, j.ID, fmt.Sprintf("create supervisor log: %v", err))
	}
	defer logf.Close()
	cmd := exec.Command(exe, "--store", env.Store.Path, "jobs", "supervise", j.ID)
	cmd.Args[0] = "lm" // the multi-call name, whatever the file is called
	cmd.Dir = confine.ProcPath(spec.Dir)
	cmd.Env = op.ChildEnv(env.Environ, "LM_HOME="+env.Home)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return Job{}, fail(ctx, env, j.ID, fmt.Sprintf("start supervisor: %v", err))
	}
	go cmd.Wait() // reap it if this process lives longer (lm mcp)
	return j, nil
}

// maxRunning is the concurrency limit: LM_JOBS_MAX_RUNNING, else
// max_running in the [jobs] table of LM_HOME's config.toml, else the default.
func maxRunning(env *op.Env, settings settingsTable) (int, error) {
	home := env.Home
	source, value := "max_running in "+config.Path(home), strconv.Itoa(settings.MaxRunning)
	if v := env.Getenv("LM_JOBS_MAX_RUNNING"); v != "" {
		source, value = "LM_JOBS_MAX_RUNNING", v
		n, err := strconv.Atoi(v)
		if err != nil {
			n = 0 // not a number: refused below
		}
		settings.MaxRunning = n
	}
	if settings.MaxRunning < 1 {
		return 0, op.Errorf(op.KindInvalid, "%s is %s: want a whole number of jobs, at least 1", source, value)
	}
	return settings.MaxRunning, nil
}

// workDir opens a job's working directory beneath the caller's project:
// the person's current directory, an agent's first root. dir is relative to
// it (default the project itself) and may not leave it, through a symlink
// either; the kernel checks that as the directory is opened.
func workDir(env *op.Env, dir string) (*os.File, error) {
	root, err := confine.For(env, "")
	if err != nil {
		return nil, err
	}
	defer root.Close()
	outside := func() error {
		return op.Errorf(op.KindDenied, "working directory %s is outside the project %s", dir, root.Dir).
			WithCategory("outside_root").WithHint("jobs run inside the project directory")
	}
	name, err := root.Resolve(dir)
	if err != nil {
		return nil, outside()
	}
	f, err := root.OpenDir(name)
	if confine.IsOutside(err) {
		return nil, outside()
	}
	if err == nil {
		if st, serr := f.Stat(); serr != nil || !st.IsDir() {
			f.Close()
			err = fmt.Errorf("not a directory")
		}
	}
	if err != nil {
		return nil, op.Errorf(op.KindInvalid, "working directory %s does not exist", root.Abs(name))
	}
	return f, nil
}
