package registry

import (
	"bytes"
	"fmt"
	"strings"

	"lmtool.dev/lm/pkg/op"
)

// CallersDoc renders docs/callers.md: every operation against every
// caller, from the declarations the operations carry, so a reviewer sees
// the whole trust boundary on one page and it cannot drift from the code.
func CallersDoc() []byte {
	var b bytes.Buffer
	b.WriteString(`# Who may call what

Generated from the operations' declarations by ` + "`make generate`" + ` (cmd/gendocs); a test fails when it is stale.

Every call has a caller, set by the face that received it:

- **person**: lm's command line; the gateway's page with the person's token (or with ` + "`--no-token`" + `).
- **agent**: ` + "`lm mcp`" + `; the gateway's ` + "`/mcp`" + `, ` + "`/mcp/sse`" + ` and spec 002's ` + "`/sse`" + ` + ` + "`/messages`" + ` with an agent token (or with ` + "`--no-token`" + `).
- **anonymous**: an HTTP request that proved nothing.

One place (` + "`op.Operation.Call`" + `) enforces the table on every face. A refused call gets exit 5, HTTP 403 or an MCP
` + "`isError`" + ` result with ` + "`error_category: denied`" + `, naming the caller and what would be allowed. Tools a caller may
not call are left out of its ` + "`tools/list`" + ` (and spec 002's ` + "`/tools`" + `).

**Person-only fields** may be set by the person only, whoever may call the operation: a program or URL of the
caller's choosing, a way out of a confinement, an approval. An agent that sets one (to anything but false, 0, "" or
empty) is refused.

Where the faces differ for the person: a stdio ` + "`command`" + ` is started from lm's command line only, never from
the page, and ` + "`servers_ask`" + ` runs a call only after a person approves it on lm's terminal (` + "`--yes`" + ` there);
over HTTP and MCP it only proposes (` + "`dry_run`" + `) unless the person granted ` + "`servers_ask.yes`" + ` at launch. Neither HTTP nor MCP ever waits on the gateway's terminal.

## Widening the agent profile

The person decides at launch, on the command line they control — never the agent:

` + "```" + `
lm mcp --allow queue                   # a group: every queue operation
lm mcp --allow queue_config,queue_add  # operations, by tool name
lm mcp --allow servers_call.command    # one person-only field
lm mcp --allow all                     # everything the person may do
lm gateway --allow …                   # the same for the gateway's agents
` + "```" + `

Granting an operation or its group does not grant its person-only fields; each is granted by name.
` + "`lm mcp --only GROUP`" + ` still narrows what is listed. Operations marked *CLI only* are not served over MCP or HTTP at all.
The routes after the faces are the operation's on the gateway's REST API (` + "`/openapi.json`" + `), under the same policy.

## The table

| Tool | Command | person | agent | anonymous | Person-only fields | Faces |
|---|---|:-:|:-:|:-:|---|---|
`)
	mark := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "—"
	}
	for _, o := range All() {
		m := o.Info()
		agent := op.Permitted(m, op.Caller{Role: op.RoleAgent}, op.Grant{})
		anonymous := op.Permitted(m, op.Caller{}, op.Grant{})
		fields := make([]string, len(m.PersonFields))
		for i, f := range m.PersonFields {
			fields[i] = "`" + f + "`"
		}
		faces := "CLI, MCP, HTTP"
		switch {
		case (m.CLIOnly || m.Stream) && len(m.HTTP) > 0:
			faces = "CLI"
		case m.CLIOnly || m.Stream:
			faces = "CLI only"
		}
		for _, r := range m.HTTP {
			faces += "; `" + r.Pattern() + "`"
			if r.PersonOnly {
				faces += " (the person only)"
			}
		}
		fmt.Fprintf(&b, "| `%s` | `lm %s` | yes | %s | %s | %s | %s |\n", m.Name, strings.Join(m.Path, " "),
			mark(agent), mark(anonymous), strings.Join(fields, ", "), faces)
	}
	return b.Bytes()
}
