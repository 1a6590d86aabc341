package tasks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"lmtool.dev/lm/pkg/confine"
	"lmtool.dev/lm/pkg/op"
)

// A finder reads one kind of task file in f.dir. A missing file is no
// tasks; a file that exists but cannot be parsed is an error naming it.
type finder func(f files) ([]Task, error)

// finders in dela's discovery order (so colliding names get dela's
// suffixes), then the runners dela does not know.
var finders = []finder{
	findMake, findNode, findPython, findTaskfile, findTurbo, findMaven, findGradle,
	findActions, findCompose, findCMake, findJust, findScripts,
	findCargo, findMise, findDeno,
}

// discover lists the tasks defined in dir, with unique names. Files that
// fail to parse are reported in problems and skipped, so one broken file
// does not hide the rest. Names come from the files alone; an installed
// runner with a machine-readable listing then supplies its own tasks,
// for a caller that is not confined.
// beneath is for a caller confined to dir: files are read beneath it, so a
// task file that is a link out of dir, or an include from outside it,
// contributes no tasks, and its problems are not read out.
func discover(dir string, beneath bool) (tasks []Task, problems []string, err error) {
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, nil, op.Errorf(op.KindNotFound, "%s is not a directory", dir)
	}
	project := files{dir: dir}
	if beneath {
		if project.root, err = confine.Open(dir); err != nil {
			return nil, nil, err
		}
		defer project.root.Close()
	}
	inside := func(string) bool { return true }
	if beneath {
		inside = insideOf(dir)
	}
	for _, find := range finders {
		more, err := find(project)
		for _, err := range unjoin(err) {
			var fe *fileError
			if errors.As(err, &fe) && !inside(fe.path) {
				problems = append(problems, fe.path+": outside the project, not read")
			} else {
				problems = append(problems, err.Error())
			}
		}
		for _, t := range more {
			if runnable(t.SourceName) && inside(t.FilePath) {
				tasks = append(tasks, t)
			}
		}
	}
	uniqify(tasks)
	if !beneath {
		// A runner's listing evaluates the project's configuration (mise's
		// templates and env, for one), which a confined caller may have
		// written: for it, the files alone say what the tasks are.
		tasks = preferListings(dir, tasks)
	}
	tasks = slices.DeleteFunc(tasks, func(t Task) bool { return !inside(t.FilePath) })
	found := map[string]bool{}
	for i := range tasks {
		tasks[i].finish(dir, found)
	}
	return tasks, problems, nil
}

// runnable says whether a runner can be given name as a task: "" names
// nothing, and a name starting with "-" would be read as its option.
func runnable(name string) bool {
	return name != "" && !strings.HasPrefix(name, "-")
}

// uniqify gives every task of a name defined more than once a runner
// suffix, exactly as dela does: the runner's first letter, else its first
// three letters, else longer prefixes, else the runner plus a number. Unlike
// dela it never looks at $SHELL or PATH, so names depend only on the files.
func uniqify(tasks []Task) {
	count := map[string]int{}
	for _, t := range tasks {
		count[t.SourceName]++
	}
	used := map[string]map[string]bool{}
	for i := range tasks {
		t := &tasks[i]
		t.Name = t.SourceName
		if count[t.SourceName] < 2 {
			continue
		}
		if used[t.SourceName] == nil {
			used[t.SourceName] = map[string]bool{}
		}
		p := suffix(strings.ToLower(t.Runner), used[t.SourceName])
		used[t.SourceName][p] = true
		t.Name = t.SourceName + "-" + p
	}
}

func suffix(runner string, used map[string]bool) string {
	runes := []rune(runner)
	if len(runes) == 0 {
		runes = []rune("x")
	}
	candidates := []string{string(runes[:1]), string(runes[:min(3, len(runes))])}
	for n := 4; n <= len(runes); n++ {
		candidates = append(candidates, string(runes[:n]))
	}
	for _, c := range candidates {
		if !used[c] {
			return c
		}
	}
	for n := 1; ; n++ {
		if c := fmt.Sprintf("%s%d", runner, n); !used[c] {
			return c
		}
	}
}

// Resolve finds the task a name means: a unique name, else a source name
// that only one task has. A source name several runners define is an error
// listing every candidate.
func Resolve(tasks []Task, name string) (Task, error) {
	var exact, bySource []Task
	for _, t := range tasks {
		if t.Name == name {
			exact = append(exact, t)
		}
		if t.SourceName == name {
			bySource = append(bySource, t)
		}
	}
	matches := exact
	if len(matches) == 0 {
		matches = bySource
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return Task{}, op.Errorf(op.KindNotFound, "no task named %q", name).
			WithCategory("task_not_found").WithHint("see 'lm tasks list'")
	}
	var lines []string
	for _, t := range matches {
		lines = append(lines, fmt.Sprintf("%s (%s from %s)", t.Name, t.Runner, t.FilePath))
	}
	return Task{}, op.Errorf(op.KindInvalid, "task name %q is ambiguous: %s", name, strings.Join(lines, "; ")).
		WithCategory("ambiguous_task").WithHint("use the name with its runner suffix")
}

// files reads a project's task files: the person's as named (a link in
// their project may lead anywhere), anyone else's beneath the project root,
// where a link out reads nothing.
type files struct {
	dir  string
	root *confine.Root // nil for the person
}

// asNamed reads files as named, for deciding whether a runner's own listing
// applies (the runner then reads its files itself).
var asNamed files

func (f files) readFile(path string) ([]byte, error) {
	if f.root == nil {
		return os.ReadFile(path)
	}
	rel, err := f.root.Resolve(path)
	if err != nil {
		return nil, err
	}
	return f.root.ReadFile(rel)
}

func (f files) stat(path string) (fs.FileInfo, error) {
	if f.root == nil {
		return os.Stat(path)
	}
	rel, err := f.root.Resolve(path)
	if err != nil {
		return nil, err
	}
	return f.root.Stat(rel)
}

func (f files) readDir(path string) ([]fs.DirEntry, error) {
	if f.root == nil {
		return os.ReadDir(path)
	}
	rel, err := f.root.Resolve(path)
	if err != nil {
		return nil, err
	}
	return f.root.ReadDir(rel)
}

// listIfExists lists a directory, nothing when it does not exist; one that
// exists but cannot be read is an error naming it.
func (f files) listIfExists(path string) ([]fs.DirEntry, error) {
	entries, err := f.readDir(path)
	var errno syscall.Errno
	switch {
	case err == nil || errors.Is(err, fs.ErrNotExist):
		return entries, nil
	case errors.As(err, &errno):
		return entries, &fileError{path, errno}
	}
	return entries, &fileError{path, err}
}

// readIfExists returns a file's content, or nil when it does not exist.
func (f files) readIfExists(path string) ([]byte, bool, error) {
	data, err := f.readFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// firstExisting returns the first of names that is a regular file in dir.
func (f files) firstExisting(dir string, names ...string) string {
	for _, n := range names {
		p := filepath.Join(dir, n)
		if st, err := f.stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// fileError is a task file that could not be read or parsed.
type fileError struct {
	path string
	err  error
}

func (e *fileError) Error() string { return e.path + ": " + e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

func parseErr(path string, err error) error { return &fileError{path, err} }

// unjoin is the errors that errors.Join made err of: none for nil.
func unjoin(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		return joined.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}
