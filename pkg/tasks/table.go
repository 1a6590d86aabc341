package tasks

import "lmtool.dev/lm/pkg/table"

// Table lists the project's tasks, a person's view of tasks list.
func (o ListOutput) Table() table.Table {
	t := table.Table{Columns: []string{"NAME", "RUNNER", "COMMAND", "DESCRIPTION"}, Empty: "no tasks in " + o.Dir}
	for _, task := range o.Tasks {
		runner := task.Runner
		if !task.RunnerAvailable {
			runner += " (not installed)"
		}
		t.Rows = append(t.Rows, []any{task.Name, runner, task.Command, task.Description})
	}
	for _, p := range o.Problems {
		t.Summary = append(t.Summary, table.Field{Name: "problem", Value: p})
	}
	return t
}
