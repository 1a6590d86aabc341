package cli

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/mark3labs/mcp-go/server"
	ucli "github.com/urfave/cli/v3"

	"lmtool.dev/lm/pkg/buildinfo"
	"lmtool.dev/lm/pkg/cappedlog"
	"lmtool.dev/lm/pkg/mcpx"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers"
)

func (a *app) mcpCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "mcp",
		Usage: "Serve lm's operations as MCP tools over stdio",
		Description: "Reads JSON-RPC from stdin and writes only JSON-RPC to stdout; errors go to stderr, and each tool call is logged to " +
			"$LM_HOME/mcp.log (--log). " +
			"It needs nothing in the environment but HOME (or LM_HOME / --store), which every MCP client passes. " +
			"It ends cleanly at the end of stdin.\n\n" +
			"Its caller is an agent: it offers the agent profile (get_user_request, the helpers, tasks and jobs within the allowlist, " +
			"the tools of configured servers) and refuses the rest; --allow widens it (see docs/callers.md).\n\n" +
			"Agents work beneath their roots: those their MCP client declares (roots/list, followed when they change), " +
			"else --root DIR, else the directory lm mcp starts in. A root an agent names may only narrow them.\n\n" +
			"Claude Code (.mcp.json):  {\"mcpServers\": {\"lm\": {\"command\": \"lm\", \"args\": [\"mcp\"]}}}",
		Flags: []ucli.Flag{
			&ucli.StringSliceFlag{Name: "only", Usage: "expose only these `GROUP`s (comma-separated or repeated), e.g. queue", Local: true},
			allowFlag(),
			rootFlag(),
			&ucli.StringFlag{Name: "connect", Usage: "bridge stdio to a running gateway's MCP `URL` (e.g. http://127.0.0.1:7437/mcp), its hub included; sends $LM_API_TOKEN", Local: true},
			&ucli.StringFlag{Name: "log", Usage: "log each tool call (get_user_request with its agent, wait and result) as JSON Lines to `FILE`, " +
				"- for stderr (default: $LM_HOME/mcp.log, kept under 1 MiB plus one rotated copy)", TakesFile: true, Local: true},
		},
		Action: func(ctx context.Context, cmd *ucli.Command) error {
			if url := cmd.String("connect"); url != "" {
				if err := servers.Connect(ctx, url, strings.TrimSpace(os.Getenv("LM_API_TOKEN")), a.streams.In, a.streams.Out); err != nil {
					return &commandError{cmd: "mcp", err: err}
				}
				return nil
			}
			only := commaList(cmd.StringSlice("only"))
			env, err := a.env(cmd)
			if err != nil {
				return err
			}
			// Whoever speaks on lm mcp's stdin is an agent, whatever
			// started it; its stdin and stdout are the protocol's.
			env.Caller = op.Caller{Role: op.RoleAgent}
			env.Stdin, env.Stdout = nil, nil
			if env.Grant, err = op.ParseGrant(commaList(cmd.StringSlice("allow")), a.ops); err != nil {
				return &commandError{cmd: "mcp", err: err}
			}
			if env.Roots, err = agentRoots(cmd); err != nil {
				return &commandError{cmd: "mcp", err: err}
			}
			delivered := &mcpx.Deliveries{}
			env.AfterReply = delivered.After
			log, closeLog, err := a.mcpLog(cmd.String("log"), env.Home)
			if err != nil {
				return &commandError{cmd: "mcp", err: err}
			}
			defer closeLog()
			s, err := mcpx.NewServer(a.ops, a.catalog.Resources, *env, buildinfo.Version(), only, server.WithHooks(mcpx.CallLog(log)))
			if err != nil {
				return &commandError{cmd: "mcp", err: err}
			}
			if err := mcpx.ServeStdio(ctx, s, a.streams.In, a.streams.Out, delivered); err != nil {
				return &commandError{cmd: "mcp", err: err}
			}
			return nil
		},
	}
}

// mcpLog is where lm mcp logs its tool calls: its stdout is the protocol's,
// and an MCP client may show its stderr nowhere, so by default a file in
// LM_HOME that every lm mcp process of this home shares. The function
// returned writes out what is still queued.
func (a *app) mcpLog(path, home string) (*slog.Logger, func(), error) {
	if path == "-" {
		return slog.New(slog.NewJSONHandler(a.streams.Err, nil)), func() {}, nil
	}
	if path == "" {
		path = filepath.Join(home, "mcp.log")
	}
	shared, err := cappedlog.OpenShared(path, mcpLogSize, 1)
	if err != nil {
		return nil, nil, err
	}
	return slog.New(slog.NewJSONHandler(shared, nil)), func() { shared.Close() }, nil
}

// mcpLogSize bounds lm mcp's log and its one rotated copy: a line per tool
// call, so some thousands of calls.
const mcpLogSize = 1 << 20

// allowFlag is how the person who starts a face lets its agents do more
// than the agent profile.
func allowFlag() ucli.Flag {
	return &ucli.StringSliceFlag{Name: "allow", Local: true,
		Usage: "let agents also call these (comma-separated or repeated): a `GROUP`, a TOOL, TOOL.FIELD for a person-only field " +
			"(servers_call.command), or all; see docs/callers.md"}
}

// commaList splits comma-separated flag values and drops empty words.
func commaList(values []string) []string {
	var out []string
	for _, v := range values {
		for _, w := range strings.Split(v, ",") {
			if w = strings.TrimSpace(w); w != "" {
				out = append(out, w)
			}
		}
	}
	return out
}
