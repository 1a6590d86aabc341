package queue

import (
	"encoding/json"
	"fmt"

	"lmtool.dev/lm/pkg/jsonio"
	"lmtool.dev/lm/pkg/op"
)

// Ops are the queue's operations, on the CLI as `lm queue …` and over MCP.
func Ops() []op.Operation {
	return []op.Operation{
		op.New(op.Meta{
			Name: "queue_add", Path: []string{"queue", "add"},
			Callers:     op.PersonOnly,
			Summary:     "Add instructions to the end of the queue",
			Description: "The text comes from the arguments, else from stdin. With --jsonl every stdin line is one instruction (a JSON string or {\"content\": …}), all added in one transaction. Empty or whitespace-only text is rejected and nothing is written.",
			Examples:    "lm queue add 'run the tests and fix what fails'\nlm queue add < note.txt\nprintf '\"one\"\\n\"two\"\\n' | lm queue add --jsonl",
			Args:        []string{"content"}, StdinText: "content",
			Lines: "contents", DecodeLine: decodeLine,
			Effect: op.Mutating,
			HTTP:   []op.Route{{Method: "POST", Path: "/api/instructions", Summary: "Add a pending instruction", Status: 201, Body: true}},
		}, Add),
		op.New(op.Meta{
			Name: "get_user_request", Path: []string{"queue", "next"},
			Callers: op.Agents,
			Summary: "Take the next instruction, waiting for one if the queue is empty",
			Description: "Returns the oldest pending instruction and marks it consumed in the same transaction. " +
				"If none is pending it waits up to the user's default_wait_seconds for one, then answers with result_type empty or default_response. " +
				"Agents should call this again after every answer instead of ending their session, so they pick up new instructions. " +
				"On the CLI it exits 0 when an instruction was delivered and 7 when the wait ended empty.",
			Aliases:  map[string][]string{"agent_id": {"agent"}},
			Examples: "lm queue next --agent me -r --jq .instruction.content\nwhile lm queue next > task.json; do …; done",
			Effect:   op.Mutating,
		}, Next),
		op.New(op.Meta{
			Name: "queue_list", Path: []string{"queue", "list"},
			Callers:  op.PersonOnly,
			Summary:  "List instructions: pending in queue order, then consumed",
			Examples: "lm queue list --status pending -r --jq '.items[] | \"\\(.position) \\(.content)\"'",
			Effect:   op.ReadOnly, Idempotent: true,
			HTTP: []op.Route{{Method: "GET", Path: "/api/instructions", Summary: "Instructions in queue order (?status=pending|consumed|all)"}},
		}, List),
		op.New(op.Meta{
			Name: "queue_show", Path: []string{"queue", "show"},
			Callers: op.PersonOnly,
			Summary: "Show one instruction", Args: []string{"id"},
			Effect: op.ReadOnly, Idempotent: true,
			HTTP: []op.Route{{Method: "GET", Path: "/api/instructions/{id}", Summary: "One instruction"}},
		}, Show),
		op.New(op.Meta{
			Name: "queue_edit", Path: []string{"queue", "edit"},
			Callers:     op.PersonOnly,
			Summary:     "Replace the text of a pending instruction",
			Description: "The new text comes from the argument after the id, or from stdin when it is - or missing. Consumed instructions cannot change (exit 4).",
			Args:        []string{"id", "content"}, StdinText: "content",
			Effect: op.Destructive, Idempotent: true,
			HTTP: []op.Route{{Method: "PATCH", Path: "/api/instructions/{id}", Summary: "Edit a pending instruction (409 once consumed)", Body: true}},
		}, Edit),
		op.New(op.Meta{
			Name: "queue_rm", Path: []string{"queue", "rm"},
			Callers: op.PersonOnly,
			Summary: "Delete a pending instruction", Args: []string{"id"},
			Description: "Consumed instructions are history and cannot be deleted this way (exit 4); see prune.",
			Effect:      op.Destructive, Idempotent: true,
			HTTP: []op.Route{{Method: "DELETE", Path: "/api/instructions/{id}", Summary: "Delete a pending instruction (409 once consumed)", Status: 204}},
		}, Remove),
		op.New(op.Meta{
			Name: "queue_move", Path: []string{"queue", "move"},
			Callers: op.PersonOnly,
			Summary: "Move a pending instruction to another place in the queue", Args: []string{"id"},
			Description: "ID may be a position instead (lm queue move 3 --to 1): a number not starting with 0, which no id does.",
			Examples:    "lm queue move 01JD --to 1\nlm queue move 3 --to 1",
			Effect:      op.Mutating, Idempotent: true,
			HTTP: []op.Route{{Method: "POST", Path: "/api/instructions/{id}/move", Summary: "Move a pending instruction to position {\"to\": N}", Body: true}},
		}, Move),
		op.New(op.Meta{
			Name: "queue_requeue", Path: []string{"queue", "requeue"},
			Callers: op.PersonOnly,
			Summary: "Put a consumed instruction back at the head of the queue", Args: []string{"id"},
			Description: "For an instruction the ledger marks delivery_unconfirmed (its consumer ended before writing it out, so the agent " +
				"probably never saw it), or one to be done again. A pending instruction is refused (exit 4).",
			Examples: "lm queue list --status consumed --jq '.items[] | select(.delivery_unconfirmed) | .id'\nlm queue requeue 01JD",
			Effect:   op.Mutating, Idempotent: false,
			HTTP: []op.Route{{Method: "POST", Path: "/api/instructions/{id}/requeue", Summary: "Put a consumed instruction back at the head of the queue (409 while pending)"}},
		}, Requeue),
		op.New(op.Meta{
			Name: "queue_status", Path: []string{"queue", "status"},
			Callers:     op.PersonOnly,
			Summary:     "Show queue counts, settings and agent activity",
			Description: "server.status is up while a gateway serves this store (lm gateway), down otherwise.",
			Effect:      op.ReadOnly, Idempotent: true,
			HTTP: []op.Route{{Method: "GET", Path: "/api/status", Summary: "Server, agent, queue and settings summary"}},
		}, GatewayStatus),
		op.New(op.Meta{
			Name: "queue_config", Path: []string{"queue", "config"},
			Callers:     op.PersonOnly,
			Summary:     "Show or change the queue settings",
			Description: "Settings: default_wait_seconds (0-86400), default_empty_response, agent_stale_after_seconds. KEY shows one, KEY=VALUE sets it.",
			Examples:    "lm queue config\nlm queue config default_wait_seconds=30\nlm queue config default_empty_response= --jq .",
			Args:        []string{"assign"},
			CLIFields:   []string{"assign"},
			Effect:      op.Mutating, Idempotent: true,
			HTTP: []op.Route{
				{Method: "GET", Path: "/api/config", Summary: "The editable settings"},
				{Method: "PATCH", Path: "/api/config", Summary: "Change settings (\"default_empty_response\": null clears it)", Body: true},
			},
		}, Config),
		op.New(op.Meta{
			Name: "queue_prune", Path: []string{"queue", "prune"},
			Callers:  op.PersonOnly,
			Summary:  "Delete consumed instructions from the history",
			Examples: "lm queue prune --consumed --older-than 7d",
			Effect:   op.Destructive, Idempotent: true,
		}, Prune),
		op.New(op.Meta{
			Name: "queue_watch", Path: []string{"queue", "watch"},
			Callers: op.PersonOnly,
			Summary: "Print queue events as JSON Lines as they happen, from any process",
			Description: "Event types: instruction.created, instruction.updated, instruction.deleted, instruction.consumed, status.changed, config.updated. Each carries the full item. " +
				"A status.changed with id 0 is an agent turning idle, which no process records: the watch notices the time pass. GET /api/events on the gateway streams the same events.",
			Examples: "lm queue watch -r --jq 'select(.type==\"instruction.consumed\") | .data.content'",
			Effect:   op.ReadOnly, Stream: true, CLIOnly: true,
		}, Watch),
	}
}

// decodeLine reads one --jsonl line: a JSON string or {"content": …}.
func decodeLine(line []byte) (any, error) {
	var s string
	if err := json.Unmarshal(line, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := jsonio.DecodeStrict(line, &obj); err != nil || obj.Content == nil {
		return nil, fmt.Errorf("want a JSON string or {\"content\": \"…\"}")
	}
	return *obj.Content, nil
}
