package servers

import (
	"path/filepath"
	"strings"

	"lmtool.dev/lm/pkg/table"
)

// Table lists the configured servers and, with a gateway running, their
// state: a person's view of servers list.
func (o ListOutput) Table() table.Table {
	gateway := "not running (states appear while lm gateway runs)"
	if o.GatewayRunning {
		gateway = "running"
	}
	t := table.Table{
		Summary: []table.Field{{Name: "file", Value: o.File}, {Name: "gateway", Value: gateway}},
		Columns: []string{"NAME", "STATE", "TRANSPORT", "COMMAND OR URL", "DESCRIPTION"},
		Empty:   "no servers configured; add one with 'lm servers add'",
	}
	for _, e := range o.Servers {
		state := any(nil)
		if e.Status != nil {
			state = table.State(e.Status.State)
		} else if e.Config != nil && e.Config.Enabled != nil && !*e.Config.Enabled {
			state = table.State("disabled")
		}
		var transport, target, desc string
		if c := e.Config; c != nil {
			transport, desc = c.Transport, c.Description
			target = c.URL
			if c.Command != "" {
				// The program's name, not its directory: the column has
				// room for what tells servers apart.
				target = strings.Join(append([]string{filepath.Base(c.Command)}, c.Args...), " ")
			}
		}
		t.Rows = append(t.Rows, []any{e.Name, state, transport, target, desc})
	}
	return t
}

// Table shows each server as the gateway sees it: a person's view of
// servers status.
func (o StatusOutput) Table() table.Table {
	t := table.Table{
		Columns: []string{"NAME", "STATE", "PID", "UP SINCE", "RESTARTS", "TOOLS", "BREAKER", "LAST ERROR"},
		Empty:   "no servers",
	}
	if o.ConfigError != "" {
		t.Summary = append(t.Summary, table.Field{Name: "config error", Value: o.ConfigError})
	}
	for _, s := range o.Servers {
		pid := any(nil)
		if s.Pid != 0 {
			pid = s.Pid
		}
		t.Rows = append(t.Rows, []any{s.Name, table.State(s.State), pid, s.StartedAt, s.RestartCount, s.Tools, table.State(strings.ToLower(s.Breaker.State)), s.LastError})
	}
	return t
}
