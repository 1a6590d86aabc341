// Package testscripts runs the *.txtar CLI scenarios against the real lm
// binary (the test binary re-executed as lm, lm-queue, …).
package testscripts

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"lmtool.dev/lm/cli"
	"lmtool.dev/lm/pkg/agent/agenttest"
)

// condition answers [everything]: whether server-everything (from npm) can
// run. Without node the scripts that need it skip, unless LM_REQUIRE_NODE
// makes that a failure.
func condition(cond string) (bool, error) {
	if cond != "everything" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	_, err := agenttest.Everything()
	if err != nil && agenttest.Required() {
		return false, err
	}
	return err == nil, nil
}

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
			e.Setenv("LM_HOME", filepath.Join(e.WorkDir, ".lm"))
			if bin, err := agenttest.Everything(); err == nil {
				e.Setenv("EVERYTHING", bin)
			}
			return nil
		},
		Condition: condition,
		Cmds:      commands,
	})
}
