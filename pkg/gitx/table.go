package gitx

import (
	"fmt"
	"time"

	"lmtool.dev/lm/pkg/table"
)

// Table is a person's view of each task: status as a branch line and the
// files by state, diff as line counts, log as one line a commit,
// changed-files as paths.
func (o Output) Table() table.Table {
	d := o.Data
	if d == nil {
		return table.Table{}
	}
	switch d.TaskType {
	case "status":
		return d.statusTable()
	case "diff":
		t := table.Table{Columns: []string{"FILE", "ADDED", "REMOVED"}, Empty: "no changes"}
		for _, c := range deref(d.Changes) {
			file := c.File
			if c.From != "" {
				file = c.From + " → " + c.File
			}
			if c.Binary {
				t.Rows = append(t.Rows, []any{file, "binary", nil})
				continue
			}
			t.Rows = append(t.Rows, []any{file, c.Added, c.Removed})
		}
		return t
	case "log":
		t := table.Table{Columns: []string{"COMMIT", "WHEN", "MESSAGE"}, Empty: "no commits"}
		for _, c := range deref(d.Commits) {
			var when any = c.Date
			if at, err := time.Parse(time.RFC3339, c.Date); err == nil {
				when = at
			}
			t.Rows = append(t.Rows, []any{c.Short, when, c.Message})
		}
		return t
	default:
		t := table.Table{Columns: []string{"STATUS", "PATH"}, Empty: "no changed files"}
		for _, f := range deref(d.Files) {
			path := f.Path
			if f.From != "" {
				path = f.From + " → " + f.Path
			}
			t.Rows = append(t.Rows, []any{table.State(f.Status), path})
		}
		return t
	}
}

// statusTable is git status: the branch line, then each path and its state.
func (d Data) statusTable() table.Table {
	t := table.Table{Columns: []string{"STATE", "PATH"}, Empty: "nothing to commit, working tree clean"}
	if b := d.Branch; b != nil {
		line := b.Head
		switch {
		case b.Detached:
			line = "HEAD detached at " + short(b.Commit)
		case b.Commit == "":
			line += " (no commits yet)"
		}
		if b.Upstream != "" {
			line += fmt.Sprintf(" → %s, %d ahead, %d behind", b.Upstream, b.Ahead, b.Behind)
		}
		t.Summary = append(t.Summary, table.Field{Name: "branch", Value: line})
	}
	add := func(state string, paths *[]string) {
		for _, p := range deref(paths) {
			t.Rows = append(t.Rows, []any{table.State(state), p})
		}
	}
	add("conflicted", d.Conflicted)
	add("staged", d.Staged)
	for _, r := range deref(d.Renamed) {
		t.Rows = append(t.Rows, []any{table.State(r.Kind + "d"), r.From + " → " + r.To})
	}
	add("modified", d.Modified)
	add("untracked", d.Untracked)
	return t
}

func short(commit string) string { return commit[:min(len(commit), 7)] }

func deref[T any](p *[]T) []T {
	if p == nil {
		return nil
	}
	return *p
}
