package jobs

import (
	"fmt"
	"strings"
	"time"

	"lmtool.dev/lm/pkg/table"
)

// Table lists jobs, a person's view of jobs list.
func (o ListOutput) Table() table.Table {
	t := table.Table{Columns: []string{"ID", "STATE", "TASK", "COMMAND", "EXIT", "STARTED", "TOOK"}, Empty: "no jobs"}
	for _, j := range o.Jobs {
		t.Rows = append(t.Rows, []any{table.ID(j.ID), table.State(j.State), j.Task, strings.Join(j.Argv, " "), j.exit(), j.StartedAt, j.took()})
	}
	return t
}

// Table shows one job, a person's view of jobs status.
func (o StatusOutput) Table() table.Table {
	j := o.Job
	t := table.Table{Summary: []table.Field{
		{Name: "job", Value: j.ID},
		{Name: "state", Value: table.State(j.State)},
		{Name: "task", Value: j.Task},
		{Name: "command", Value: strings.Join(j.Argv, " ")},
		{Name: "directory", Value: j.Dir},
		{Name: "created", Value: j.CreatedAt},
		{Name: "started", Value: j.StartedAt},
		{Name: "took", Value: j.took()},
		{Name: "exit", Value: j.exit()},
		{Name: "output", Value: table.Bytes(int64(j.BytesEmitted))},
		{Name: "containment", Value: j.Containment},
	}}
	if j.Error != "" {
		t.Summary = append(t.Summary, table.Field{Name: "error", Value: j.Error})
	}
	return t
}

// exit is how the job ended: its exit code or signal, nil while it runs.
func (j Job) exit() any {
	switch {
	case j.Signal != "":
		return j.Signal
	case j.ExitCode != nil:
		return *j.ExitCode
	}
	return nil
}

// took is how long the job ran, or has run so far; nil before it started.
func (j Job) took() any {
	if j.StartedAt == nil {
		return nil
	}
	end := time.Now()
	if j.FinishedAt != nil {
		end = *j.FinishedAt
	}
	return end.Sub(*j.StartedAt)
}

// outcome says in a line how the job stands: "j_… exited 0 after 3.1s".
func (j Job) outcome() string {
	switch {
	case !j.Terminal():
		return fmt.Sprintf("%s is %s; follow it with 'lm jobs logs -f %s', stop it with 'lm jobs stop %s'", j.ID, j.State, j.ID, j.ID)
	case j.Signal != "":
		return fmt.Sprintf("%s %s by %s after %s", j.ID, j.State, j.Signal, table.Duration(j.took().(time.Duration)))
	case j.ExitCode != nil && j.StartedAt != nil:
		return fmt.Sprintf("%s %s %d after %s", j.ID, j.State, *j.ExitCode, table.Duration(j.took().(time.Duration)))
	case j.Error != "":
		return fmt.Sprintf("%s %s: %s", j.ID, j.State, j.Error)
	}
	return fmt.Sprintf("%s %s", j.ID, j.State)
}

// Text is a started job's output as the terminal shows it, with how the
// job stands on stderr.
func (o StartOutput) Text() (string, string) {
	text := ""
	if o.Output != nil {
		text = o.Output.Data
	}
	return text, o.Job.outcome()
}

// Text is a chunk of the job's output as it was written; a chunk that
// ends the job says how it ended.
func (o LogsOutput) Text() (string, string) {
	status := ""
	if o.Evicted > 0 {
		status = fmt.Sprintf("%d bytes of earlier output were evicted from the log", o.Evicted)
	}
	if o.EOF {
		status = strings.TrimSpace(status + "\n" + o.JobID + " " + o.State)
	}
	return o.Data, status
}

// Text is how the waited-for job stands, for stderr; a wait that ran out
// says the job runs on.
func (o WaitOutput) Text() (string, string) {
	return "", o.Job.outcome()
}
