package testscripts

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/npmtest"
)

// TestAgentRootsFollowTheClient runs lm mcp under a host built with the
// official TypeScript SDK that declares roots and then changes them: lm
// reads files beneath the declared roots only, a root the agent names may
// only narrow them, allow_outside_root is refused, and after
// notifications/roots/list_changed lm follows the new list.
func TestAgentRootsFollowTheClient(t *testing.T) {
	script := npmtest.Skip(t, "clients/roots.mjs")
	lm := lmPath(t)
	home, start, a, b := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(a, "a.txt"), []byte("ALPHA\n"), 0o644)
	os.WriteFile(filepath.Join(b, "b.txt"), []byte("BRAVO\n"), 0o644)
	os.WriteFile(filepath.Join(start, "a.txt"), []byte("START\n"), 0o644)

	type step struct {
		Step    string
		IsError bool
		Text    string
		Listed  int
	}
	steps := map[string]step{}
	for _, s := range nodeClient[step](t, start, home, script, lm, a, b) {
		steps[s.Step] = s
	}
	read := func(step, content string) {
		t.Helper()
		s, ok := steps[step]
		if !ok || s.IsError || !strings.Contains(s.Text, content) {
			t.Errorf("%s: want %s read, got %+v", step, content, s)
		}
	}
	refused := func(step, secret string) {
		t.Helper()
		s, ok := steps[step]
		if !ok || !s.IsError || !strings.Contains(s.Text, `"denied"`) && !strings.Contains(s.Text, "outside_root") || strings.Contains(s.Text, secret) {
			t.Errorf("%s: want a refusal without %s, got %+v", step, secret, s)
		}
	}
	read("declared", "ALPHA") // the declared root, not the directory lm started in
	if strings.Contains(steps["declared"].Text, "START") {
		t.Error("read the start directory although the client declared roots")
	}
	refused("other-root", "BRAVO")
	refused("absolute-outside", "BRAVO")
	refused("allow-outside", "BRAVO")
	read("changed", "BRAVO")
	refused("old-root", "ALPHA")
	if got := steps["changed"].Listed; got != 2 {
		t.Errorf("roots/list was asked %d times, want once per list", got)
	}
}

// TestAgentRootsWithoutClientRoots: a client that declares no roots works
// in the directory lm mcp started in, or in the person's --root.
func TestAgentRootsWithoutClientRoots(t *testing.T) {
	home, start, other := t.TempDir(), t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(start, "s.txt"), []byte("START\n"), 0o644)
	os.WriteFile(filepath.Join(other, "o.txt"), []byte("OTHER\n"), 0o644)
	c := startMCPIn(t, home, start, "no-roots")
	if text, isErr := callTool(t, c, "local_extract", map[string]any{"task_type": "pattern_match", "patterns": []string{"."}, "files": []string{"s.txt"}}); isErr || !strings.Contains(text, "START") {
		t.Errorf("start directory: %s", text)
	}
	if text, isErr := callTool(t, c, "local_extract", map[string]any{"task_type": "pattern_match", "patterns": []string{"."}, "root": other, "files": []string{"o.txt"}}); !isErr || strings.Contains(text, "OTHER") {
		t.Errorf("another directory: %s", text)
	}
}

// callTool calls a tool and returns its result's text and whether it is an
// error.
func callTool(t *testing.T, c *client.Client, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return text.String(), res.IsError
}
