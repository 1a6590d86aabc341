package cli

import (
	"context"
	"os"
	"strings"

	ucli "github.com/urfave/cli/v3"

	"lmtool.dev/lm/pkg/buildinfo"
	"lmtool.dev/lm/pkg/mcpx"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers"
)

func (a *app) mcpCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "mcp",
		Usage: "Serve lm's operations as MCP tools over stdio",
		Description: "Reads JSON-RPC from stdin and writes only JSON-RPC to stdout; logs go to stderr. " +
			"It needs nothing in the environment but HOME (or LM_HOME / --store), which every MCP client passes. " +
			"It ends cleanly at the end of stdin.\n\n" +
			"Claude Code (.mcp.json):  {\"mcpServers\": {\"lm\": {\"command\": \"lm\", \"args\": [\"mcp\"]}}}",
		Flags: []ucli.Flag{
			&ucli.StringSliceFlag{Name: "only", Usage: "expose only these `GROUP`s (comma-separated or repeated), e.g. queue", Local: true},
			&ucli.StringFlag{Name: "connect", Usage: "bridge stdio to a running gateway's MCP `URL` (e.g. http://127.0.0.1:7437/mcp), its hub included; sends $LM_API_TOKEN", Local: true},
		},
		Action: func(ctx context.Context, cmd *ucli.Command) error {
			if url := cmd.String("connect"); url != "" {
				if err := servers.Connect(ctx, url, strings.TrimSpace(os.Getenv("LM_API_TOKEN")), a.streams.In, a.streams.Out); err != nil {
					return &commandError{cmd: "mcp", err: err}
				}
				return nil
			}
			var only []string
			for _, v := range cmd.StringSlice("only") {
				for _, g := range strings.Split(v, ",") {
					if g = strings.TrimSpace(g); g != "" {
						only = append(only, g)
					}
				}
			}
			env, err := a.env(cmd)
			if err != nil {
				return err
			}
			// Whoever speaks on lm mcp's stdin is an agent, whatever
			// started it.
			env.Caller = op.Caller{Role: op.RoleAgent}
			delivered := &mcpx.Deliveries{}
			env.AfterReply = delivered.After
			s, err := mcpx.NewServer(a.ops, *env, buildinfo.Version(), only)
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
