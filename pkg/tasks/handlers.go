package tasks

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"lmtool.dev/lm/pkg/confine"
	"lmtool.dev/lm/pkg/op"
)

// ListInput selects tasks.
type ListInput struct {
	Runner string `json:"runner,omitempty" jsonschema:"only tasks of this runner (make, npm, just, …)"`
	Dir    string `json:"dir,omitempty" jsonschema:"the project directory (default: the current directory)"`
}

// ListOutput is the project's tasks.
type ListOutput struct {
	Dir   string `json:"dir"`
	Tasks []Task `json:"tasks"`
	// Problems are files that exist but could not be read.
	Problems []string `json:"problems,omitempty"`
}

// List discovers the tasks in a directory.
func List(_ context.Context, env *op.Env, in ListInput) (ListOutput, error) {
	dir, beneath, err := projectFor(env, in.Dir)
	if err != nil {
		return ListOutput{}, err
	}
	all, problems, err := discover(dir, beneath)
	if err != nil {
		return ListOutput{}, err
	}
	out := ListOutput{Dir: dir, Tasks: []Task{}, Problems: problems}
	for _, t := range all {
		if in.Runner == "" || t.Runner == in.Runner {
			out.Tasks = append(out.Tasks, t)
		}
	}
	return out, nil
}

// projectDir is dir made absolute, defaulting to the working directory.
func projectDir(dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", op.Errorf(op.KindInvalid, "directory %q: %v", dir, err)
	}
	return abs, nil
}

// projectFor is a call's project directory: the person's dir as given
// (default the working directory); anyone else's beneath its roots, where
// discovery keeps to it (beneath is then true).
func projectFor(env *op.Env, dir string) (string, bool, error) {
	if env.Caller.IsPerson() {
		abs, err := projectDir(dir)
		return abs, false, err
	}
	root, err := confine.For(env, dir)
	if err != nil {
		return "", false, err
	}
	defer root.Close()
	return root.Dir, true, nil
}

// Find discovers the tasks in dir and resolves name among them.
func Find(dir, name string) (Task, error) {
	dir, err := projectDir(dir)
	if err != nil {
		return Task{}, err
	}
	return find(dir, name, false)
}

// FindFor is [Find] in the caller's project: for anyone but the person,
// beneath its roots, where a task file linked out of them defines nothing.
func FindFor(env *op.Env, dir, name string) (Task, string, error) {
	dir, beneath, err := projectFor(env, dir)
	if err != nil {
		return Task{}, "", err
	}
	t, err := find(dir, name, beneath)
	return t, dir, err
}

func find(dir, name string, beneath bool) (Task, error) {
	all, _, err := discover(dir, beneath)
	if err != nil {
		return Task{}, err
	}
	return Resolve(all, name)
}

// ShowInput names a task.
type ShowInput struct {
	Name string `json:"name" jsonschema:"the task's unique name (build-m) or, when unambiguous, its source name"`
	Dir  string `json:"dir,omitempty" jsonschema:"the project directory (default: the current directory)"`
}

// ShowOutput is one task.
type ShowOutput struct {
	Task Task `json:"task"`
}

// Show resolves a task name.
func Show(_ context.Context, env *op.Env, in ShowInput) (ShowOutput, error) {
	t, _, err := FindFor(env, in.Dir, in.Name)
	return ShowOutput{Task: t}, err
}

// CommandInput names a task and its arguments.
type CommandInput struct {
	Task string   `json:"task" jsonschema:"the task's unique or source name"`
	Args []string `json:"args,omitempty" jsonschema:"arguments appended to the task's command"`
	Dir  string   `json:"dir,omitempty" jsonschema:"the project directory (default: the current directory)"`
}

// CommandOutput is the command that would run.
type CommandOutput struct {
	Command         string   `json:"command" jsonschema:"the POSIX shell command, quoted"`
	Argv            []string `json:"argv"`
	Dir             string   `json:"dir"`
	RunnerAvailable bool     `json:"runner_available"`
}

// Command renders a task's command line.
func Command(_ context.Context, env *op.Env, in CommandInput) (CommandOutput, error) {
	t, dir, err := FindFor(env, in.Dir, in.Task)
	if err != nil {
		return CommandOutput{}, err
	}
	argv := t.WithArgs(in.Args)
	return CommandOutput{Command: ShellQuote(argv), Argv: argv, Dir: dir, RunnerAvailable: t.RunnerAvailable}, nil
}

// RunInput names a task to run in the foreground.
type RunInput struct {
	Name string   `json:"name" jsonschema:"the task's unique or source name"`
	Args []string `json:"args,omitempty" jsonschema:"arguments passed to the task"`
	Dir  string   `json:"dir,omitempty" jsonschema:"the project directory (default: the current directory)"`
}

// RunOutput carries the task's exit status to the CLI.
type RunOutput struct {
	Status int `json:"exit_code"`
}

// ExitCode passes the task's status through.
func (r RunOutput) ExitCode() int { return r.Status }

// Run runs a task attached to the caller's streams: running a task for a
// person in the foreground means giving it the terminal.
func Run(_ context.Context, env *op.Env, in RunInput) (RunOutput, error) {
	dir, err := projectDir(in.Dir)
	if err != nil {
		return RunOutput{}, err
	}
	t, err := find(dir, in.Name, false)
	if err != nil {
		return RunOutput{}, err
	}
	if err := PersonMayRun(env.Home, t); err != nil {
		return RunOutput{}, err
	}
	argv := t.WithArgs(in.Args)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, op.ChildEnv(env.Environ)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = env.Stdin, env.Stdout, env.Stderr
	// Ctrl-C reaches the task through the terminal's process group; lm
	// waits for it to finish rather than killing it.
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return RunOutput{}, nil
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return RunOutput{Status: 128 + int(ws.Signal())}, nil
		}
		return RunOutput{Status: exit.ExitCode()}, nil
	case errors.Is(err, exec.ErrNotFound):
		return RunOutput{}, RunnerMissing(t)
	}
	return RunOutput{}, op.Errorf(op.KindInternal, "run %s: %w", t.Name, err)
}

// RunnerMissing is the error for running a task whose runner is not
// installed (exit 6): the same for lm tasks run and lm jobs start.
func RunnerMissing(t Task) error {
	return op.Errorf(op.KindUnavailable, "task %s needs %s, which is not installed", t.Name, t.Argv[0]).
		WithCategory("runner_unavailable")
}

// ReadAllowlistInput picks an allowlist.
type ReadAllowlistInput struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"which allowlist: mcp (default) or human"`
}

// ReadAllowlistOutput is the file's text and its parsed entries.
type ReadAllowlistOutput struct {
	Namespace string    `json:"namespace"`
	Path      string    `json:"path"`
	Exists    bool      `json:"exists"`
	TOML      string    `json:"toml"`
	Allowlist Allowlist `json:"allowlist"`
}

// ReadAllowlist shows an allowlist.
func ReadAllowlist(_ context.Context, env *op.Env, in ReadAllowlistInput) (ReadAllowlistOutput, error) {
	ns := in.Namespace
	if ns == "" {
		ns = NamespaceMCP
	}
	path := AllowlistPath(env.Home, ns)
	a, data, err := LoadAllowlist(path)
	if err != nil {
		return ReadAllowlistOutput{}, err
	}
	if a.Entries == nil {
		a.Entries = []Entry{}
	}
	return ReadAllowlistOutput{Namespace: ns, Path: path, Exists: data != nil, TOML: string(data), Allowlist: a}, nil
}

// AllowInput names a task and how widely to allow or deny it.
type AllowInput struct {
	Name      string `json:"name" jsonschema:"the task's unique or source name"`
	Scope     string `json:"scope,omitempty" jsonschema:"task (default), file or directory"`
	Namespace string `json:"namespace,omitempty" jsonschema:"which allowlist: mcp (default) or human"`
	Dir       string `json:"dir,omitempty" jsonschema:"the project directory (default: the current directory)"`
}

// AllowOutput is the entry written.
type AllowOutput struct {
	Path  string `json:"path"`
	Entry Entry  `json:"entry"`
}

// Allow adds an allow entry.
func Allow(_ context.Context, env *op.Env, in AllowInput) (AllowOutput, error) {
	return edit(env, in, false)
}

// Deny adds a deny entry.
func Deny(_ context.Context, env *op.Env, in AllowInput) (AllowOutput, error) {
	return edit(env, in, true)
}

func edit(env *op.Env, in AllowInput, deny bool) (AllowOutput, error) {
	if !env.CanAsk() {
		return AllowOutput{}, op.Errorf(op.KindDenied, "changing the allowlist needs a person at a terminal").
			WithHint("run it yourself in a terminal, or edit %s", AllowlistPath(env.Home, orMCP(in.Namespace)))
	}
	t, err := Find(in.Dir, in.Name)
	if err != nil {
		return AllowOutput{}, err
	}
	e := Entry{Path: canonical(t.FilePath)}
	switch strings.ToLower(in.Scope) {
	case "", "task":
		e.Scope, e.Tasks = ScopeTask, []string{t.SourceName}
	case "file":
		e.Scope = ScopeFile
	case "directory":
		e.Scope, e.Path = ScopeDirectory, filepath.Dir(e.Path)
	}
	if deny {
		if e.Scope == ScopeTask {
			e.Tasks = []string{t.SourceName}
		}
		e.Scope = ScopeDeny
	}
	path := AllowlistPath(env.Home, orMCP(in.Namespace))
	if err := Append(path, e); err != nil {
		if op.KindOf(err) != op.KindInternal {
			return AllowOutput{}, err
		}
		return AllowOutput{}, op.Errorf(op.KindInternal, "write %s: %w", path, err)
	}
	return AllowOutput{Path: path, Entry: e}, nil
}

func orMCP(ns string) string {
	if ns == "" {
		return NamespaceMCP
	}
	return ns
}
