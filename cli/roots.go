package cli

import (
	ucli "github.com/urfave/cli/v3"

	"lmtool.dev/lm/pkg/gatewayd"
)

// rootFlag is --root on the commands that serve agents: the directories
// the person lets them work in.
func rootFlag() ucli.Flag {
	return &ucli.StringSliceFlag{Name: "root", TakesFile: true, Local: true,
		Usage: "let agents work beneath `DIR` (repeatable; default: the directory lm starts in), unless their MCP client declares roots"}
}

// agentRoots are --root's directories, absolute, else the working directory.
func agentRoots(cmd *ucli.Command) ([]string, error) {
	return gatewayd.AgentRoots(cmd.StringSlice("root"))
}
