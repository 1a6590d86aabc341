// Package queue is the human→agent instruction queue of spec 000: people add
// instructions, agents take them one at a time with get_user_request, and
// consumed instructions stay visible as history but can no longer change.
package queue

import (
	"errors"
	"fmt"
	"time"

	"lmtool.dev/lm/pkg/proc"
)

// Instruction statuses.
const (
	StatusPending  = "pending"
	StatusConsumed = "consumed"
)

// Instruction is one queued instruction.
type Instruction struct {
	ID                string     `json:"id" jsonschema:"sortable unique id (ULID); any unique prefix selects it on the CLI"`
	Content           string     `json:"content" jsonschema:"the instruction text"`
	Status            string     `json:"status" jsonschema:"pending or consumed"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
	ConsumedAt        *time.Time `json:"consumed_at" jsonschema:"when an agent took it; null while pending"`
	ConsumedByAgentID *string    `json:"consumed_by_agent_id" jsonschema:"the agent that took it; null while pending"`
	Position          *int       `json:"position" jsonschema:"1-based place among pending instructions; null once consumed"`
	// Unconfirmed marks a consumed instruction whose consumer ended before
	// the agent could have seen it (lm mcp or lm queue next killed between
	// taking it and writing it out): lm queue requeue puts it back.
	Unconfirmed bool `json:"delivery_unconfirmed,omitempty" jsonschema:"consumed, but the consumer ended before writing it out: the agent probably never saw it (lm queue requeue puts it back)"`
	// order is the stored sort key among pending instructions.
	Order uint64 `json:"-"`
}

// Record is the stored form of an instruction; the position is derived.
type Record struct {
	ID                string     `json:"id"`
	Content           string     `json:"content"`
	Status            string     `json:"status"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
	ConsumedAt        *time.Time `json:"consumed_at,omitempty"`
	ConsumedByAgentID *string    `json:"consumed_by_agent_id,omitempty"`
	Order             uint64     `json:"order"`
	// Version counts the changes to the stored instruction, so a change
	// computed from an older one is refused (see [Tx.Replace]).
	Version uint64 `json:"version,omitempty"`
	// Unacknowledged is set from the moment an instruction is consumed
	// until the consuming process has written it out; Consumer names that
	// process, so a reader can tell a delivery in progress from one whose
	// consumer died.
	Unacknowledged bool      `json:"unacknowledged,omitempty"`
	Consumer       *Consumer `json:"consumer,omitempty"`
}

// Consumer names the process that consumed an instruction, with the
// machine (its process table: proc.MachineID) and the boot it ran in: a queue in a shared database is read on
// other machines, whose /proc knows nothing of it.
type Consumer struct {
	proc.Process
	Machine string `json:"machine,omitempty"`
	Boot    string `json:"boot,omitempty"`
}

// Ended reports whether the consumer is known to have ended. Another
// machine's cannot be told from here, so it has not; one of an earlier
// boot of this machine has; one of this boot is looked up. (A record
// written before machine and boot were kept is looked up as of this boot.)
func (c *Consumer) Ended() bool {
	switch {
	case c.Machine != "" && c.Machine != proc.MachineID():
		return false
	case c.Boot != "" && c.Boot != proc.BootID():
		return true
	}
	return !c.Alive()
}

// check rejects a stored record no code path writes: its id, status and
// the fields a consumed instruction needs are what the queue relies on.
func (r Record) check() error {
	switch {
	case r.ID == "":
		return errors.New("no id")
	case r.Status == StatusPending:
	case r.Status == StatusConsumed:
		if r.ConsumedAt == nil || r.ConsumedByAgentID == nil {
			return errors.New("consumed without consumed_at and consumed_by_agent_id")
		}
	default:
		return fmt.Errorf("status %q is neither %s nor %s", r.Status, StatusPending, StatusConsumed)
	}
	return nil
}

func (r Record) instruction(position int) Instruction {
	in := Instruction{ID: r.ID, Content: r.Content, Status: r.Status, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		ConsumedAt: r.ConsumedAt, ConsumedByAgentID: r.ConsumedByAgentID, Order: r.Order,
		Unconfirmed: r.Status == StatusConsumed && r.Unacknowledged && (r.Consumer == nil || r.Consumer.Ended())}
	if r.Status == StatusPending && position > 0 {
		in.Position = &position
	}
	return in
}

// Settings are the user-controlled queue settings.
type Settings struct {
	DefaultWaitSeconds     int    `json:"default_wait_seconds" jsonschema:"seconds get_user_request waits for an instruction before answering empty (0-86400)"`
	DefaultEmptyResponse   string `json:"default_empty_response" jsonschema:"text returned when the wait ends empty; empty text gives result_type empty"`
	AgentStaleAfterSeconds int    `json:"agent_stale_after_seconds" jsonschema:"an agent not seen for this many seconds is shown idle"`
}

// Defaults for a new store.
const (
	DefaultWaitSeconds     = 10
	DefaultEmptyResponse   = "call this tool `get_user_request` again to fetch latest user input..."
	DefaultAgentStaleAfter = 30
	// MaxWaitSeconds is the absolute cap on a wait, whatever the settings say.
	MaxWaitSeconds = 86400
	// ClientTimeoutSeconds is where most MCP clients abort a tool call.
	ClientTimeoutSeconds = 50
)

// DefaultSettings are the settings of a new queue, and of a setting a
// stored one lacks.
func DefaultSettings() Settings {
	return Settings{DefaultWaitSeconds: DefaultWaitSeconds, DefaultEmptyResponse: DefaultEmptyResponse, AgentStaleAfterSeconds: DefaultAgentStaleAfter}
}

// Result types of get_user_request.
const (
	ResultInstruction     = "instruction"
	ResultEmpty           = "empty"
	ResultDefaultResponse = "default_response"
)

// Agent is what the queue knows of an agent from its get_user_request calls.
type Agent struct {
	AgentID        string     `json:"agent_id"`
	LastSeenAt     time.Time  `json:"last_seen_at" jsonschema:"last time the agent called get_user_request (start or end of a call)"`
	LastFetchAt    *time.Time `json:"last_fetch_at" jsonschema:"last time a call returned to the agent"`
	LastResultType string     `json:"last_result_type,omitempty" jsonschema:"instruction, empty or default_response"`
	WaitingUntil   *time.Time `json:"waiting_until,omitempty" jsonschema:"end of the wait of the call in progress, if any"`
	Waiting        bool       `json:"waiting" jsonschema:"a call from this agent is waiting now"`
	Connected      bool       `json:"connected" jsonschema:"seen within agent_stale_after_seconds, or waiting now"`
}
