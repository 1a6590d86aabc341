package client

import (
	"time"

	"lmtool.dev/lm/pkg/table"
)

// Table lists recorded calls, a person's view of servers history.
func (o HistoryOutput) Table() table.Table {
	t := table.Table{Columns: []string{"ID", "WHEN", "TARGET", "TOOL", "OUTCOME", "TOOK", "SUMMARY"}, Empty: "no calls recorded"}
	for _, r := range o.Items {
		t.Rows = append(t.Rows, []any{table.ID(r.ID), r.Time, r.Target.String(), r.Tool, table.State(r.Outcome),
			time.Duration(r.DurationMS) * time.Millisecond, r.Summary})
	}
	return t
}
