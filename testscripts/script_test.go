// Package testscripts runs the *.txtar CLI scenarios against the real lm
// binary (the test binary re-executed as lm, lm-queue, …).
package testscripts

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"lmtool.dev/lm/cli"
)

func TestMain(m *testing.M) {
	lm := func() { os.Exit(cli.Main()) }
	testscript.Main(m, map[string]func(){
		"lm":       lm,
		"lm-queue": lm,
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 ".",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(e *testscript.Env) error {
			home := filepath.Join(e.WorkDir, ".lm")
			e.Setenv("LM_HOME", home)
			e.Defer(func() { stopLeftoverGateway(home) })
			// MCP servers from npm for the hub's scripts (npm ci --prefix testdata/node).
			nodeBin, err := filepath.Abs(filepath.Join("..", "testdata", "node", "node_modules", ".bin"))
			if err != nil {
				return err
			}
			e.Setenv("NODE_SERVERS", nodeBin)
			return nil
		},
		Cmds: commands,
	})
}

// stopLeftoverGateway ends a background gateway a failed script left
// running, so it does not outlive the test.
func stopLeftoverGateway(home string) {
	data, err := os.ReadFile(filepath.Join(home, "gateway.pid"))
	if err != nil {
		return
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
