// Package tasks discovers the tasks a project defines for other runners
// (make, npm, just, task, …), names them the way dela does, and decides
// through the MCP allowlist which of them an agent may run.
package tasks

import (
	"os/exec"
	"path/filepath"
	"strings"
)

// Task is one runnable task found in a project file. Its JSON form is
// spec 003's TaskDto plus the command that runs it.
type Task struct {
	// Name is unique within the project: the source name, suffixed with a
	// runner prefix when several runners define the same name (build-m).
	Name       string `json:"name" jsonschema:"the unique name (e.g. build-m when make and npm both define build)"`
	SourceName string `json:"source_name" jsonschema:"the name as written in the file"`
	Runner     string `json:"runner" jsonschema:"the runner's short name: make, npm, just, task, …"`
	FilePath   string `json:"file_path" jsonschema:"absolute path of the file that defines the task"`
	// Description is the task's help text, when the file gives one.
	Description     string   `json:"description,omitempty"`
	Command         string   `json:"command" jsonschema:"the shell command that runs the task, quoted"`
	Argv            []string `json:"argv" jsonschema:"the command as an argument vector (run without a shell)"`
	RunnerAvailable bool     `json:"runner_available" jsonschema:"whether the runner's program is installed"`
	// ListedBy is set when the installed runner's own listing reported the
	// task rather than lm's reading of the file.
	ListedBy string `json:"listed_by,omitempty" jsonschema:"the runner whose machine-readable listing reported the task (just, task or mise); absent when lm parsed the file"`
}

// newTask builds a task run by argv; argsAfter is inserted before user
// arguments (task needs "--").
func newTask(runner, source, file, desc string, argv ...string) Task {
	return Task{SourceName: source, Runner: runner, FilePath: file, Description: desc, Argv: argv}
}

// finish fills the fields derived from the argument vector; found caches
// PATH lookups, which would otherwise dominate discovery.
func (t *Task) finish(dir string, found map[string]bool) {
	t.Command = ShellQuote(t.Argv)
	ok, seen := found[t.Argv[0]]
	if !seen {
		ok = available(dir, t.Argv[0])
		found[t.Argv[0]] = ok
	}
	t.RunnerAvailable = ok
}

func available(dir, program string) bool {
	if strings.Contains(program, "/") {
		p := program
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		_, err := exec.LookPath(p)
		return err == nil
	}
	_, err := exec.LookPath(program)
	return err == nil
}

// ShellQuote renders argv as a POSIX shell command line that runs exactly
// argv: words with anything but safe characters are single-quoted.
func ShellQuote(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		words[i] = quoteWord(w)
	}
	return strings.Join(words, " ")
}

func quoteWord(w string) string {
	if w == "" {
		return "''"
	}
	safe := true
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,+@%^", r)) {
			safe = false
			break
		}
	}
	if safe {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
