package tasks

import (
	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/op"
)

// Ops are the task operations: `lm tasks …` and the MCP tools list_tasks,
// get_task, get_command and read_allowlist.
func Ops() []op.Operation {
	return []op.Operation{
		op.New(op.Meta{
			Name: "list_tasks", Path: []string{"tasks", "list"},
			Callers: op.Agents,
			Summary: "List the tasks the project's files define, with unique names",
			Description: "Discovers Make, package.json (npm/yarn/pnpm/bun), pyproject (uv, poetry, poe, pdm, hatch), Taskfile, turbo, Maven, Gradle, " +
				"GitHub Actions (act), Docker Compose, CMake, justfile, *.sh, Cargo aliases and cargo-make, mise and deno tasks. " +
				"A name several runners define gets a runner suffix on every copy (build-m, build-n), as dela names them.",
			Examples: "lm tasks list\nlm tasks list --runner make -r --jq '.tasks[].name'",
			Effect:   op.ReadOnly, Idempotent: true,
		}, List),
		op.New(op.Meta{
			Name: "get_task", Path: []string{"tasks", "show"},
			Callers: op.Agents,
			Summary: "Show one task by its unique or source name", Args: []string{"name"},
			Effect: op.ReadOnly, Idempotent: true,
		}, Show),
		op.New(op.Meta{
			Name: "get_command", Path: []string{"tasks", "command"},
			Callers: op.Agents,
			Summary: "Print the shell command that runs a task, without running it",
			Description: "Arguments after the task name are placed where the task's runner hands them to the task (after npm's --, …; see the README), " +
				"as separate, quoted words. lm's own flags go before --: every word after it is the task's.",
			Examples: "lm tasks command -r --jq .command test -- -run TestX",
			Args:     []string{"task", "args"},
			Effect:   op.ReadOnly, Idempotent: true,
		}, Command),
		op.New(op.Meta{
			Name: "tasks_run", Path: []string{"tasks", "run"},
			Callers: op.PersonOnly,
			Summary: "Run a task in the foreground on this terminal; its exit status passes through",
			Description: "For people: the task inherits stdin, stdout and stderr, and lm prints nothing itself. Use `lm jobs start` to run it in the background. " +
				"Words after -- are the task's, placed where its runner hands them to it (npm run NAME -- WORDS, …). " +
				"A Deny entry in the human allowlist ($LM_HOME/allowlist.toml, `lm tasks deny NAME --namespace human`) refuses the task; without one it runs.",
			Examples: "lm tasks run build\nlm tasks run test -- -v",
			Args:     []string{"name", "args"},
			Effect:   op.Destructive, Stream: true, CLIOnly: true,
		}, Run),
		op.New(op.Meta{
			Name: "read_allowlist", Path: []string{"tasks", "allowlist"},
			Callers: op.Agents,
			Summary: "Show the MCP (or human) allowlist as TOML and as JSON",
			Description: "Read-only. MCP may run a task only when $LM_HOME/mcp_allowlist.toml allows it; people change it with `lm tasks allow|deny` or by editing the file. " +
				"The human allowlist ($LM_HOME/allowlist.toml) is separate: its Deny entries stop `lm tasks run` and `lm jobs start` from running a task.",
			Effect: op.ReadOnly, Idempotent: true,
		}, ReadAllowlist),
		op.New(op.Meta{
			Name: "tasks_allow", Path: []string{"tasks", "allow"},
			Callers:     op.PersonOnly,
			Summary:     "Allow MCP clients to run a task, its file or its directory (needs a terminal)",
			Description: "Adds an entry to the allowlist. It refuses to run without a terminal on stdin, so an agent cannot grant itself access through a shell.",
			Examples:    "lm tasks allow test-m\nlm tasks allow build --scope file",
			Args:        []string{"name"},
			Effect:      op.Mutating, CLIOnly: true,
		}, Allow),
		op.New(op.Meta{
			Name: "tasks_deny", Path: []string{"tasks", "deny"},
			Callers:     op.PersonOnly,
			Summary:     "Deny MCP clients (or, with --namespace human, yourself) a task, or everything in its file with --scope file (needs a terminal)",
			Description: "Deny entries are checked before any allow entry.",
			Args:        []string{"name"},
			Effect:      op.Mutating, CLIOnly: true,
		}, Deny),
	}
}

// RefineSchema lists the namespaces.
func (ReadAllowlistInput) RefineSchema(s *jsonschema.Schema) {
	s.Properties["namespace"].Enum = []any{NamespaceMCP, NamespaceHuman}
}

// RefineSchema lists the scopes.
func (AllowInput) RefineSchema(s *jsonschema.Schema) {
	s.Properties["scope"].Enum = []any{"task", "file", "directory"}
	s.Properties["namespace"].Enum = []any{NamespaceMCP, NamespaceHuman}
}
