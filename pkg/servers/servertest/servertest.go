// Package servertest finds the third-party MCP servers that tests run as
// real children: npm packages pinned in testdata/node and installed with
// `npm ci --prefix testdata/node`.
package servertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// NodeServer is the path of the npm-installed server binary bin (such as
// mcp-server-everything). Without node the test is skipped, unless
// LM_REQUIRE_NODE is set, as it is in CI; node without the packages
// installed is a failure that says how to install them.
func NodeServer(t testing.TB, bin string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil && os.Getenv("LM_REQUIRE_NODE") == "" {
		t.Skip("node is not installed (set LM_REQUIRE_NODE=1 to make this a failure)")
	}
	_, here, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(here), "..", "..", "..", "testdata", "node", "node_modules", ".bin", bin)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is not installed: run npm ci --prefix testdata/node (%v)", bin, err)
	}
	return path
}
