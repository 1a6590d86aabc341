package queue

import (
	"fmt"

	"lmtool.dev/lm/pkg/table"
)

// Table lists instructions in queue order, a person's view of queue list.
func (o ListOutput) Table() table.Table {
	t := table.Table{Columns: []string{"#", "ID", "STATUS", "AGE", "CONTENT", "CONSUMER"}, Empty: "no instructions"}
	for _, in := range o.Items {
		t.Rows = append(t.Rows, []any{in.Position, table.ID(in.ID), table.State(in.Status), in.CreatedAt, in.Content, in.ConsumedByAgentID})
	}
	return t
}

// Table summarises the queue, its settings and the agents it has seen.
func (o StatusOutput) Table() table.Table {
	t := table.Table{
		Summary: []table.Field{
			{Name: "gateway", Value: o.gatewayLine()},
			{Name: "pending", Value: o.Queue.PendingCount},
			{Name: "consumed", Value: o.Queue.ConsumedCount},
			{Name: "wait", Value: fmt.Sprintf("%ds", o.Settings.DefaultWaitSeconds)},
		},
		Columns: []string{"AGENT", "STATE", "LAST SEEN", "LAST RESULT"},
		Empty:   "no agent has asked for an instruction yet",
	}
	for _, a := range o.Agents {
		state := "idle"
		switch {
		case a.Waiting:
			state = "waiting"
		case a.Connected:
			state = "connected"
		}
		t.Rows = append(t.Rows, []any{a.AgentID, table.State(state), a.LastSeenAt, a.LastResultType})
	}
	return t
}

func (o StatusOutput) gatewayLine() string {
	if o.Server.Status != "up" {
		return o.Server.Status
	}
	return "up since " + o.Server.StartedAt.Local().Format("15:04:05 Jan 2")
}

// Table lists what was added, with each instruction's place in the queue.
func (o AddOutput) Table() table.Table {
	items := o.Items
	if o.Item != nil {
		items = []Instruction{*o.Item}
	}
	return ListOutput{Items: items}.Table()
}
