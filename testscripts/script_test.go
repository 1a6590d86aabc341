// Package testscripts runs the *.txtar CLI scenarios against the real lm
// binary (the test binary re-executed as lm, lm-queue, …).
package testscripts

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"lmtool.dev/lm/cli"
	"lmtool.dev/lm/pkg/npmtest"
	"lmtool.dev/lm/pkg/registry"
)

// condition answers [everything]: whether server-everything (from npm) can
// run. Without node the scripts that need it skip, unless LM_REQUIRE_NODE
// makes that a failure.
func condition(cond string) (bool, error) {
	if cond != "everything" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	_, err := npmtest.Bin("mcp-server-everything")
	if err != nil && npmtest.Required() {
		return false, err
	}
	return err == nil, nil
}

func TestMain(m *testing.M) {
	// make test runs these tests under make, whose variables would reach
	// the real make of every task the tests run: MAKELEVEL makes it print
	// "Entering directory", MAKEFLAGS passes make test's own options.
	for _, v := range []string{"MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEFILES", "MAKEOVERRIDES"} {
		os.Unsetenv(v)
	}
	lm := func() { os.Exit(cli.Main(registry.Catalog())) }
	testscript.Main(m, map[string]func(){
		"lm":       lm,
		"lm-queue": lm,
		"ontty":    func() { os.Exit(ontty()) },
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
			// No script reaches the OS keyring of the person running the
			// tests; the keyring's Go tests run a private one (keyringtest).
			e.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(e.WorkDir, "no-bus"))
			e.Defer(func() { stopLeftoverGateway(home) })
			// MCP servers from npm (testdata/node), for the hub's and the
			// client's scripts.
			if bin, err := npmtest.Bin("mcp-server-everything"); err == nil {
				e.Setenv("EVERYTHING", bin)
				e.Setenv("NODE_SERVERS", filepath.Dir(bin))
			}
			return nil
		},
		Condition: condition,
		Cmds:      commands,
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
