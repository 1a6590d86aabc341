// Package agenttest finds (and on first use installs) the MCP servers from
// npm that the client's tests run against: a real third-party server, not a
// mock of our own making.
package agenttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// Package is the reference server the tests talk to.
const Package = "@modelcontextprotocol/server-everything"

// Prefix is the npm prefix the tests install into: $LM_TEST_NODE_PREFIX,
// else ~/.cache/lm-test-node (where .ci/run installs).
func Prefix() string {
	if p := os.Getenv("LM_TEST_NODE_PREFIX"); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "lm-test-node")
}

var (
	once    sync.Once
	binPath string
	binErr  error
)

// Everything returns the path of server-everything's executable,
// installing it with npm into Prefix when node is present but the package
// is not. An error means the tests cannot run it.
func Everything() (string, error) {
	once.Do(func() {
		bin := filepath.Join(Prefix(), "node_modules", ".bin", "mcp-server-everything")
		if _, err := exec.LookPath("node"); err != nil {
			binErr = fmt.Errorf("node is not installed: %w", err)
			return
		}
		if _, err := os.Stat(bin); err != nil {
			out, err := exec.Command("npm", "install", "--no-audit", "--no-fund", "--prefix", Prefix(), Package).CombinedOutput()
			if err != nil {
				binErr = fmt.Errorf("npm install %s: %v\n%s", Package, err, out)
				return
			}
		}
		binPath = bin
	})
	return binPath, binErr
}

// Required reports whether a missing server fails the tests instead of
// skipping them (CI sets LM_REQUIRE_NODE=1).
func Required() bool { return os.Getenv("LM_REQUIRE_NODE") != "" }
