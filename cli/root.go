package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v3"

	"lmtool.dev/lm/pkg/buildinfo"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/store"
)

// root builds a fresh command tree; urfave flags keep parse state, so a tree
// is never reused between runs.
func (a *app) root() *ucli.Command {
	a.ops = a.catalog.Ops
	root := &ucli.Command{
		Name:  "lm",
		Usage: "composable tools for people and coding agents, over one shared store",
		Description: "Every command prints its result on stdout and diagnostics on stderr. Piped, the result is a JSON document " +
			"(or JSON Lines for streams), what scripts and agents read; at a terminal, list and status commands print a table " +
			"and a job's output prints as text (--json, --jq or -o json|table|tsv choose). Colour only on a terminal, " +
			"not with NO_COLOR. At a terminal, control characters in what a result holds (a job's output, a name) are " +
			"shown escaped, never sent to it; piped output keeps them exact. `lm mcp` serves the same operations as MCP tools. lm's own flags (--jq, -r, --json-errors, …) " +
			"go before `--`: every word after it belongs to the task or program the command runs.\n\n" + ExitStatusText,
		Version:                   buildinfo.Version(),
		Reader:                    a.streams.In,
		Writer:                    a.streams.Out,
		ErrWriter:                 a.streams.Err,
		EnableShellCompletion:     true,
		Suggest:                   true,
		HideVersion:               true,
		ExitErrHandler:            func(context.Context, *ucli.Command, error) {},
		DisableSliceFlagSeparator: true,
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "store", Usage: "the store file (default: $LM_STORE, else $LM_HOME/lm.db), or a postgres:// URL for a queue a team shares (password in PGPASSWORD)", TakesFile: true},
			&ucli.StringFlag{Name: "jq", Aliases: []string{"q"}, Usage: "filter the output with a jq `EXPR`"},
			&ucli.BoolFlag{Name: "raw-output", Aliases: []string{"r"}, Usage: "with --jq, print strings without quotes (control characters escaped on a terminal)"},
			&ucli.BoolFlag{Name: "json-errors", Usage: "report errors as a JSON object on stderr (also LM_JSON_ERRORS=1)"},
			&ucli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "also report routine progress on stderr (a server connecting), as on a terminal"},
			&durationFlag{Name: "lock-timeout", Value: store.DefaultLockTimeout, Usage: "how long to wait for another process holding the store", Sources: ucli.EnvVars("LM_LOCK_TIMEOUT")},
		},
		Action: func(ctx context.Context, cmd *ucli.Command) error {
			if cmd.Args().Present() {
				return unknownCommand(cmd)
			}
			return ucli.ShowRootCommandHelp(cmd)
		},
		ConfigureShellCompletionCommand: configureCompletion,
	}
	// An operation whose path is just its group (`lm verify`) is the group
	// command itself; any deeper operations of that group hang below it.
	groupOps := map[string]op.Operation{}
	for _, o := range a.ops {
		if m := o.Info(); len(m.Path) == 1 {
			groupOps[m.Group()] = o
		}
	}
	// A group with a command of its own outside the registry (`lm gateway`
	// serves in the foreground) takes the group's operations below it.
	handWritten := map[string]*ucli.Command{"gateway": a.gatewayCommand()}
	groups := map[string]*ucli.Command{}
	for _, g := range a.catalog.Groups {
		groups[g.Name] = &ucli.Command{Name: g.Name, Usage: g.Summary, Action: groupAction}
		if o, ok := groupOps[g.Name]; ok {
			groups[g.Name] = a.opCommand(o)
		} else if c, ok := handWritten[g.Name]; ok {
			groups[g.Name] = c
		}
		for alias, group := range groupAliases {
			if group == g.Name {
				groups[g.Name].Aliases = append(groups[g.Name].Aliases, alias)
			}
		}
		root.Commands = append(root.Commands, groups[g.Name])
	}
	for _, o := range a.ops {
		m := o.Info()
		if len(m.Path) == 1 {
			if groups[m.Group()] == nil { // a top-level command such as version
				root.Commands = append(root.Commands, a.opCommand(o))
			}
			continue
		}
		parent := groups[m.Group()]
		for i, name := range m.Path[1 : len(m.Path)-1] {
			child := parent.Command(name)
			if child == nil {
				child = &ucli.Command{Name: name, Usage: a.catalog.Subgroups[strings.Join(m.Path[:i+2], " ")], Action: groupAction}
				parent.Commands = append(parent.Commands, child)
			}
			parent = child
		}
		parent.Commands = append(parent.Commands, a.opCommand(o))
	}
	root.Commands = append(root.Commands, a.mcpCommand())
	root.Walk(func(c *ucli.Command) error {
		c.OnUsageError = func(_ context.Context, c *ucli.Command, err error, _ bool) error {
			return explainUsage(c, err)
		}
		return nil
	})
	return root
}

// groupAction answers a group invoked without a known subcommand.
func groupAction(_ context.Context, cmd *ucli.Command) error {
	if cmd.Args().Present() {
		return unknownCommand(cmd)
	}
	return &usageError{cmd: cmd.FullName(), err: fmt.Errorf("%s needs a subcommand: %s", cmd.FullName(), subcommands(cmd))}
}

func subcommands(cmd *ucli.Command) string {
	var names []string
	for _, c := range cmd.VisibleCommands() {
		if c.Name != "help" {
			names = append(names, c.Name)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// ExitStatusText is the exit-code table every command shares, for help.
var ExitStatusText = exitStatusText()

func exitStatusText() string {
	var b strings.Builder
	b.WriteString("EXIT STATUS")
	for _, row := range op.ExitStatuses() {
		fmt.Fprintf(&b, "\n  %-3d %s", row.Code, row.Meaning)
	}
	return b.String()
}
