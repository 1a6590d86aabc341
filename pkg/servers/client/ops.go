package client

import "lmtool.dev/lm/pkg/op"

const targetHelp = "The server is a configured server's name (the first argument), or --url URL (streamable HTTP, falling back to SSE; " +
	"--header K:V and --bearer TOKEN or $LM_SERVER_TOKEN), or -- CMD ARGS… at the end of the line (stdio; the command line only). " +
	"Connection states are reported on stderr (disconnected and error always; connecting and connected at a terminal or with -v); a dropped HTTP or SSE connection is " +
	"reconnected after 1, 2, 4, 8 and 16 s (LM_RECONNECT_BACKOFF sets the first delay) before giving up."

// Ops are the MCP client's operations: `lm servers info|tools|resources|
// prompts|ping|call|ask|history|fav|sequence`.
func Ops() []op.Operation {
	return []op.Operation{
		op.New(op.Meta{
			Name: "servers_info", Path: []string{"servers", "info"},
			Callers: op.Agents, PersonFields: []string{"command", "url", "header", "bearer"},
			Summary:     "Show an MCP server's name, version, protocol version and capabilities",
			Description: targetHelp,
			Examples:    "lm servers info --url http://127.0.0.1:3001/mcp\nlm servers info -- npx -y @modelcontextprotocol/server-everything",
			Args:        []string{"server"}, Trailing: "command",
			Effect: op.ReadOnly, Idempotent: true,
		}, Info),
		op.New(op.Meta{
			Name: "servers_tools", Path: []string{"servers", "tools"},
			Callers: op.Agents, PersonFields: []string{"command", "url", "header", "bearer"},
			Summary:     "List an MCP server's tools with their schemas and annotations",
			Description: targetHelp,
			Examples:    "lm servers tools -r --jq '.tools[].name' -- npx -y @modelcontextprotocol/server-everything",
			Args:        []string{"server"}, Trailing: "command",
			Effect: op.ReadOnly, Idempotent: true,
			HTTP: []op.Route{{Method: "GET", Path: "/api/servers/{server}/tools", Summary: "A configured server's tools with their schemas"}},
		}, Tools),
		op.New(op.Meta{
			Name: "servers_resources", Path: []string{"servers", "resources"},
			Callers: op.Agents, PersonFields: []string{"command", "url", "header", "bearer"},
			Summary:     "List an MCP server's resources and resource templates",
			Description: targetHelp,
			Args:        []string{"server"}, Trailing: "command",
			Effect: op.ReadOnly, Idempotent: true,
		}, Resources),
		op.New(op.Meta{
			Name: "servers_prompts", Path: []string{"servers", "prompts"},
			Callers: op.Agents, PersonFields: []string{"command", "url", "header", "bearer"},
			Summary:     "List an MCP server's prompts",
			Description: targetHelp,
			Args:        []string{"server"}, Trailing: "command",
			Effect: op.ReadOnly, Idempotent: true,
		}, Prompts),
		op.New(op.Meta{
			Name: "servers_ping", Path: []string{"servers", "ping"},
			Callers: op.Agents, PersonFields: []string{"command", "url", "header", "bearer"},
			Summary:     "Check that an MCP server answers",
			Description: targetHelp,
			Args:        []string{"server"}, Trailing: "command",
			Effect: op.ReadOnly, Idempotent: true,
		}, Ping),
		op.New(op.Meta{
			Name: "servers_call", Path: []string{"servers", "call"},
			Callers: op.Agents, PersonFields: []string{"command", "url", "header", "bearer"},
			Summary: "Call a tool of an MCP server and print its result",
			Description: "Positional arguments: [SERVER] TOOL [JSON]. The arguments (JSON, --arg NAME=VALUE converted by the tool's schema, " +
				"or arguments over MCP) are checked against the tool's input schema before anything is sent; on a terminal, missing " +
				"required arguments are asked for one by one. The result is the tool's structuredContent, else its content. " +
				"A tool that reports an error exits 1 with its message. Every call is recorded in lm servers history. " + targetHelp,
			Examples: "lm servers call echo '{\"message\":\"hi\"}' --url http://127.0.0.1:3001/mcp\n" +
				"lm servers call get-sum --arg a=1 --arg b=2 -- npx -y @modelcontextprotocol/server-everything",
			Args: []string{"server", "tool", "json"}, Trailing: "command",
			Effect: op.Destructive,
			HTTP:   []op.Route{{Method: "POST", Path: "/api/call", Summary: "Run a tool call the person approved, recorded as approved (the person's token only)", Body: true, PersonOnly: true}},
		}, Call),
		op.New(op.Meta{
			Name: "servers_ask", Path: []string{"servers", "ask"},
			Callers: op.Agents, PersonFields: []string{"command", "url", "header", "bearer", "yes"},
			Summary: "Ask in natural language: the model proposes tool calls, you approve, edit or reject each",
			Description: "Positional arguments: [SERVER] REQUEST; a lone REQUEST goes to the configured server when there is only one. It starts with a summary of the server on stderr " +
				"(name, version, tools and a few example requests). The configured model ([model] in $LM_HOME/config.toml, or LM_MODEL and " +
				"LM_MODEL_URL) sees the server's tools and proposes one call at a time; a proposal naming an unknown tool or with " +
				"arguments its schema rejects is sent back to the model with the reason and never shown as runnable. On a terminal " +
				"each call is shown in full and you answer y (run it), e (edit the arguments in $EDITOR, checked again), a (run it " +
				"and the rest of this request's calls) or n (reject it, which ends the request). --yes runs every call unasked " +
				"(recorded as auto); --dry-run only shows the first proposal. With no terminal and neither flag, nothing runs " +
				"(exit 5). After each result the model may propose a follow-up, until it answers or --max-steps calls ran (stopped: max_steps, " +
				"exit 0, with the model's summary or else the last result). " +
				"The output lists each step (proposal, approval, result) and the model's answer. Over MCP or HTTP servers_ask " +
				"only proposes (dry_run must be true): it never runs a call a person has not approved. " + targetHelp,
			Examples: "lm servers ask everything 'add 2 and 40'\n" +
				"lm servers ask 'echo hello' --dry-run -- npx -y @modelcontextprotocol/server-everything",
			Args: []string{"server", "request"}, Trailing: "command",
			Effect: op.Destructive,
			HTTP:   []op.Route{{Method: "POST", Path: "/api/ask", Summary: "Ask the model for a tool call to propose (dry_run must be true; previous turns give context)", Body: true}},
		}, Ask),
		op.New(op.Meta{
			Name: "servers_history", Path: []string{"servers", "history"},
			Callers:     op.PersonOnly,
			Summary:     "List the tool calls made, oldest first",
			Description: "Each entry: target, tool, arguments, approval (approved: a person ran it; auto: an agent or program did), duration, outcome and the start of the result.",
			Examples:    "lm servers history --target http://127.0.0.1:3001/mcp --limit 10",
			Effect:      op.ReadOnly, Idempotent: true,
			HTTP: []op.Route{{Method: "GET", Path: "/api/history", Summary: "The tool calls made, oldest first"}},
		}, History),
		op.New(op.Meta{
			Name: "servers_history_rerun", Path: []string{"servers", "history", "rerun"},
			Callers: op.PersonOnly,
			Summary: "Run a call from the history again",
			Args:    []string{"id"},
			Effect:  op.Destructive,
		}, Rerun),
		op.New(op.Meta{
			Name: "servers_fav_add", Path: []string{"servers", "fav", "add"},
			Callers:     op.PersonOnly,
			Summary:     "Save a tool call under a name",
			Description: "Positional arguments: NAME [SERVER] TOOL [JSON]. The tool and arguments are checked against the server first. Tokens are never saved. " + targetHelp,
			Examples:    "lm servers fav add hello echo '{\"message\":\"hello\"}' --url http://127.0.0.1:3001/mcp",
			Args:        []string{"name", "server", "tool", "json"}, Trailing: "command",
			Effect: op.Mutating,
		}, FavAdd),
		op.New(op.Meta{
			Name: "servers_fav_list", Path: []string{"servers", "fav", "list"},
			Callers: op.PersonOnly,
			Summary: "List the saved tool calls",
			Effect:  op.ReadOnly, Idempotent: true,
		}, FavList),
		op.New(op.Meta{
			Name: "servers_fav_run", Path: []string{"servers", "fav", "run"},
			Callers: op.PersonOnly,
			Summary: "Run a saved tool call",
			Args:    []string{"name"},
			Effect:  op.Destructive,
		}, FavRun),
		op.New(op.Meta{
			Name: "servers_fav_rm", Path: []string{"servers", "fav", "rm"},
			Callers: op.PersonOnly,
			Summary: "Remove a saved tool call",
			Args:    []string{"name"},
			Effect:  op.Destructive, Idempotent: true,
		}, FavRm),
		op.New(op.Meta{
			Name: "servers_sequence", Path: []string{"servers", "sequence"},
			Callers: op.PersonOnly,
			Summary: "Run a chain of tool calls from a file, later arguments computed with jq from earlier results",
			Description: "The file: {\"steps\": [{\"name\": N, \"tool\": T, \"arguments\": {…}, \"jq\": {\"ARG\": \"EXPR\"}}, …]}. " +
				"Each jq expression runs over an object of the earlier steps' results by name and must give one value. " +
				"The steps share one session, watched by a heartbeat ping (LM_HEARTBEAT, default 30s). The run stops at the first " +
				"failing step, which failed_step names, and exits with that step's error code. " + targetHelp,
			Examples: "lm servers sequence steps.json -- npx -y @modelcontextprotocol/server-everything",
			Args:     []string{"file", "server"}, Trailing: "command",
			Effect: op.Destructive,
		}, RunSequence),
	}
}
