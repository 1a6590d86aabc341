package tasks

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"
)

// A listing is a runner's own machine-readable account of a project's
// tasks. An installed runner knows its format better than any parser
// (imports, modules, generated tasks), so its answer replaces the parser's
// tasks of that runner; when the runner is missing or fails, the parser's
// answer stands.
type listing struct {
	runner string
	// argv is the listing command, or nil when dir has no file for the
	// runner (it must not answer from a parent directory or the user's
	// global configuration).
	argv   func(dir string) []string
	decode func(dir string, out []byte) ([]Task, error)
}

var listings = []listing{
	{runner: "just", argv: justListing, decode: decodeJustDump},
	{runner: "task", argv: taskListing, decode: decodeTaskList},
	{runner: "mise", argv: miseListing, decode: decodeMiseTasks},
}

// listingTimeout bounds a runner that hangs; discovery then falls back to
// the parser.
const listingTimeout = 10 * time.Second

// preferListings replaces each listed runner's parsed tasks by what the
// runner itself reports. Names stay those the files alone gave (tasks were
// uniqified before), so installing a runner never renames a task: a task
// both know keeps its name, one only the runner knows is named without
// renaming any other, and one only the parser saw is dropped.
func preferListings(dir string, tasks []Task) []Task {
	for _, l := range listings {
		listed, ok := l.list(dir)
		if ok {
			tasks = merge(tasks, l.runner, listed)
		}
	}
	return tasks
}

// list runs the runner's listing; ok is false when there is none to use.
func (l listing) list(dir string) ([]Task, bool) {
	argv := l.argv(dir)
	if argv == nil {
		return nil, false
	}
	program, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), listingTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, argv[1:]...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, false
	}
	listed, err := l.decode(dir, out)
	if err != nil {
		return nil, false
	}
	listed = slices.DeleteFunc(listed, func(t Task) bool { return !runnable(t.SourceName) })
	for i := range listed {
		listed[i].ListedBy = l.runner
	}
	return listed, true
}

// merge puts listed in place of tasks' runner tasks, keeping their order
// and names; tasks only the runner reports follow them.
func merge(tasks []Task, runner string, listed []Task) []Task {
	byName := map[string]Task{}
	for _, t := range listed {
		byName[t.SourceName] = t
	}
	taken := map[string]bool{}
	for _, t := range tasks {
		taken[t.Name] = true
		taken[t.SourceName] = true
	}
	var out []Task
	at := -1
	for _, t := range tasks {
		if t.Runner != runner {
			out = append(out, t)
			continue
		}
		if lt, ok := byName[t.SourceName]; ok {
			lt.Name = t.Name
			out = append(out, lt)
			delete(byName, t.SourceName)
		}
		at = len(out)
	}
	if at < 0 {
		at = len(out)
	}
	var extra []Task
	for _, t := range listed {
		if _, ok := byName[t.SourceName]; !ok {
			continue
		}
		t.Name = extraName(t, taken)
		taken[t.Name] = true
		extra = append(extra, t)
	}
	return append(out[:at:at], append(extra, out[at:]...)...)
}

// extraName names a task only the runner reports: its source name when no
// other task uses it, else the source name with the first free dela suffix,
// so that every name the files gave keeps meaning the same task.
func extraName(t Task, taken map[string]bool) string {
	if !taken[t.SourceName] {
		return t.SourceName
	}
	used := map[string]bool{}
	for {
		p := suffix(t.Runner, used)
		if !taken[t.SourceName+"-"+p] {
			return t.SourceName + "-" + p
		}
		used[p] = true
	}
}

func justListing(dir string) []string {
	if asNamed.firstExisting(dir, justfileNames...) == "" {
		return nil
	}
	return []string{"just", "--dump", "--dump-format", "json"}
}

// justModule is the part of `just --dump --dump-format json` lm reads: a
// module's recipes (in order) and its submodules.
type justModule struct {
	Recipes json.RawMessage `json:"recipes"`
	Modules json.RawMessage `json:"modules"`
}

// decodeJustDump lists public recipes, those of modules as mod::recipe,
// which is how just runs them.
func decodeJustDump(dir string, out []byte) ([]Task, error) {
	file := asNamed.firstExisting(dir, justfileNames...)
	var tasks []Task
	var walk func(prefix string, raw []byte) error
	walk = func(prefix string, raw []byte) error {
		var m justModule
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		err := eachKey(m.Recipes, func(name string, raw json.RawMessage) error {
			var r struct {
				Doc     *string `json:"doc"`
				Private bool    `json:"private"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				return fmt.Errorf("recipe %s: %w", name, err)
			}
			if !r.Private {
				full := prefix + name
				tasks = append(tasks, newTask("just", full, file, deref(r.Doc), "just", full))
			}
			return nil
		})
		if err != nil {
			return err
		}
		return eachKey(m.Modules, func(name string, raw json.RawMessage) error {
			return walk(prefix+name+"::", raw)
		})
	}
	return tasks, walk("", out)
}

func taskListing(dir string) []string {
	if asNamed.firstExisting(dir, taskfileNames...) == "" {
		return nil
	}
	// Without --no-status, go-task works out each task's up_to_date by
	// running the shell commands of its status: list.
	return []string{"task", "--list-all", "--json", "--no-status"}
}

// taskNamespace is `task --list-all --json`'s output (go-task's editor
// integration format): tasks with the Taskfile that defines each, and,
// in nested form, namespaces of their own.
type taskNamespace struct {
	Tasks []struct {
		Task     string `json:"task"`
		Name     string `json:"name"` // the task's name before go-task 3.41 added task
		Desc     string `json:"desc"`
		Summary  string `json:"summary"`
		Location struct {
			Taskfile string `json:"taskfile"`
		} `json:"location"`
	} `json:"tasks"`
	Namespaces map[string]*taskNamespace `json:"namespaces"`
}

func decodeTaskList(dir string, out []byte) ([]Task, error) {
	var root taskNamespace
	if err := json.Unmarshal(out, &root); err != nil {
		return nil, err
	}
	main := asNamed.firstExisting(dir, taskfileNames...)
	var tasks []Task
	var walk func(ns *taskNamespace)
	walk = func(ns *taskNamespace) {
		if ns == nil {
			return // "namespaces": {"x": null}
		}
		for _, t := range ns.Tasks {
			file := t.Location.Taskfile
			if file == "" {
				file = main
			}
			desc := t.Desc
			if desc == "" {
				desc = t.Summary
			}
			name := cmp.Or(t.Task, t.Name)
			tasks = append(tasks, newTask("task", name, file, desc, "task", name))
		}
		for _, name := range sortedNames(ns.Namespaces) {
			walk(ns.Namespaces[name])
		}
	}
	walk(&root)
	return tasks, nil
}

func miseListing(dir string) []string {
	for _, p := range append(append([]string(nil), miseConfigs...), miseTaskDirs...) {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			return []string{"mise", "tasks", "ls", "--json"}
		}
	}
	return nil
}

// decodeMiseTasks keeps the tasks defined in dir: mise also lists those of
// parent directories and the user's global configuration, which are not the
// project's.
func decodeMiseTasks(dir string, out []byte) ([]Task, error) {
	var listed []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Source      string `json:"source"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &listed); err != nil {
		return nil, err
	}
	var tasks []Task
	inside := insideOf(dir)
	for _, t := range listed {
		if t.Source == "" || !inside(t.Source) {
			continue
		}
		tasks = append(tasks, newTask("mise", t.Name, t.Source, t.Description, "mise", "run", t.Name))
	}
	return tasks, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
