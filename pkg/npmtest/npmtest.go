// Package npmtest finds the third-party MCP servers the tests run as real
// children. They are pinned in the repository's testdata/node (package.json
// and package-lock.json) and installed with `npm ci --prefix testdata/node`,
// which .ci/run does; on a machine with node but without them, the first
// test that needs them installs them the same way.
package npmtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	once       sync.Once
	prefix     string
	installErr error
)

// Bin returns the path of an installed server's executable (for example
// "mcp-server-everything"). An error means the tests cannot run it.
func Bin(name string) (string, error) {
	once.Do(install)
	if installErr != nil {
		return "", installErr
	}
	bin := filepath.Join(prefix, "node_modules", ".bin", name)
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s is not in testdata/node: add it to testdata/node/package.json (%w)", name, err)
	}
	return bin, nil
}

// Script returns the path of a test client script in testdata/node
// (for example "clients/roots.mjs"), run with node so that it finds the
// pinned packages beside it.
func Script(name string) (string, error) {
	once.Do(install)
	if installErr != nil {
		return "", installErr
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("node is not installed: %w", err)
	}
	return filepath.Join(prefix, filepath.FromSlash(name)), nil
}

// Required reports whether a missing server fails a test instead of
// skipping it (CI sets LM_REQUIRE_NODE=1).
func Required() bool { return os.Getenv("LM_REQUIRE_NODE") != "" }

// Skip reports why a test cannot have the server (or, for a name ending
// in .mjs, the client script), or fails when CI requires it. It returns the
// path otherwise.
func Skip(t interface {
	Helper()
	Skipf(string, ...any)
	Fatalf(string, ...any)
}, name string) string {
	t.Helper()
	find := Bin
	if filepath.Ext(name) == ".mjs" {
		find = Script
	}
	bin, err := find(name)
	if err == nil {
		return bin
	}
	if Required() {
		t.Fatalf("%v", err)
	}
	t.Skipf("%v (set LM_REQUIRE_NODE=1 to make this a failure)", err)
	return ""
}

func install() {
	root, err := repoRoot()
	if err != nil {
		installErr = err
		return
	}
	prefix = filepath.Join(root, "testdata", "node")
	if _, err := os.Stat(filepath.Join(prefix, "node_modules")); err == nil {
		return
	}
	if _, err := exec.LookPath("npm"); err != nil {
		installErr = fmt.Errorf("node and npm are not installed: %w", err)
		return
	}
	out, err := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--prefix", prefix).CombinedOutput()
	if err != nil {
		installErr = fmt.Errorf("npm ci --prefix %s: %v\n%s", prefix, err, out)
	}
}

// repoRoot walks up from the working directory (a test's package) to the
// directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Serve runs an installed server's executable (bin, from [Bin] or [Skip])
// over HTTP in a transport mode it takes as its argument (server-everything:
// "streamableHttp" or "sse") on a loopback port, waits up to 10 s until it
// listens, and returns a function that kills it with its process group,
// which also runs when the test ends.
func Serve(t testing.TB, bin, mode string, port int) (stop func()) {
	t.Helper()
	cmd := exec.Command(bin, mode)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		})
	}
	t.Cleanup(stop)
	for range 200 {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return stop
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s %s did not listen on port %d", filepath.Base(bin), mode, port)
	return nil
}
