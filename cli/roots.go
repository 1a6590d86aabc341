package cli

import (
	"os"
	"path/filepath"

	ucli "github.com/urfave/cli/v3"

	"lmtool.dev/lm/pkg/op"
)

// rootFlag is --root on the commands that serve agents: the directories
// the person lets them work in.
func rootFlag() ucli.Flag {
	return &ucli.StringSliceFlag{Name: "root", TakesFile: true, Local: true,
		Usage: "let agents work beneath `DIR` (repeatable; default: the directory lm starts in), unless their MCP client declares roots"}
}

// agentRoots are --root's directories, absolute, else the working directory.
func agentRoots(cmd *ucli.Command) ([]string, error) {
	dirs := cmd.StringSlice("root")
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	roots := make([]string, 0, len(dirs))
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, op.Errorf(op.KindInvalid, "--root %s: %v", d, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return nil, op.Errorf(op.KindInvalid, "--root %s is not a directory", d)
		}
		roots = append(roots, abs)
	}
	return roots, nil
}
