// Package testscripts runs the *.txtar CLI scenarios against the real lm
// binary (the test binary re-executed as lm, lm-queue, …).
package testscripts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"lmtool.dev/lm/cli"
	"lmtool.dev/lm/pkg/cgroup"
	"lmtool.dev/lm/pkg/npmtest"
	"lmtool.dev/lm/pkg/registry"
)

// condition answers [everything]: whether server-everything (from npm) can
// run (without node the scripts that need it skip, unless LM_REQUIRE_NODE
// makes that a failure); [cgroup]: whether this system gives a job a
// cgroup of its own, as lm would make it; and [mounts]: whether a script
// may mount file systems in a mount namespace of its own, through
// $UNSHARE (without one the scripts that need it skip, unless
// LM_REQUIRE_MOUNTS makes that a failure).
func condition(cond string) (bool, error) {
	switch cond {
	case "everything":
		_, err := npmtest.Bin("mcp-server-everything")
		if err != nil && npmtest.Required() {
			return false, err
		}
		return err == nil, nil
	case "cgroup":
		return cgroupAvailable()
	case "mounts":
		_, err := unshare()
		if err != nil && os.Getenv("LM_REQUIRE_MOUNTS") != "" {
			return false, err
		}
		return err == nil, nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// unshare is the command that runs a program in a mount namespace of its
// own, where it may mount a tmpfs: as root a new namespace is enough; other
// users need a user namespace too. The mounts vanish with the namespace, so
// nothing a script mounts can outlive it.
var unshare = sync.OnceValues(func() (string, error) {
	command := "unshare -m"
	if os.Geteuid() != 0 {
		command = "unshare -Urm"
	}
	probe := exec.Command("sh", "-c", command+` sh -c 'd=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs "$d" && umount "$d" && rmdir "$d"'`)
	if out, err := probe.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cannot mount a tmpfs in a mount namespace (%s): %v: %s", command, err, out)
	}
	return command, nil
})

var cgroupAvailable = sync.OnceValues(func() (bool, error) {
	g, err := cgroup.New(fmt.Sprintf("lm-test-probe-%d", os.Getpid()))
	if err != nil {
		return false, nil
	}
	return true, g.Remove(0)
})

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
			if command, err := unshare(); err == nil {
				e.Setenv("UNSHARE", command)
			}
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
