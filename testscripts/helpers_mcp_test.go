package testscripts

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestHelperToolsOverMCP calls spec 001's tools through `lm mcp` with
// mcp-go's stdio client and checks each answers with the spec's envelope
// as structured content, and that a failure is an isError result carrying
// the error envelope.
func TestHelperToolsOverMCP(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	write := func(name, content string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("plan.md", "---\nwave: 2\n---\n# Plan\n")
	write("src/store.ts", "import { create } from 'zustand';\nexport const useStore = create(() => 1);\n")
	git := exec.Command("sh", "-c", "git init -q && git add . && git -c user.name=t -c user.email=t@t commit -qm init && echo more >> plan.md")
	git.Dir = dir
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git: %v %s", err, out)
	}
	c := startMCPIn(t, home, dir, "helpers")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	call := func(tool string, args map[string]any) (map[string]any, bool) {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = tool, args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if res.IsError && res.StructuredContent == nil {
			text, _ := res.Content[0].(mcp.TextContent)
			raw = []byte(text.Text)
		}
		var out map[string]any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s: result is not a JSON object: %s", tool, raw)
		}
		return out, res.IsError
	}
	query := func(v any, path ...any) any {
		for _, p := range path {
			switch p := p.(type) {
			case string:
				v = v.(map[string]any)[p]
			case int:
				v = v.([]any)[p]
			}
		}
		return v
	}

	out, isErr := call("local_extract", map[string]any{"task_type": "frontmatter", "files": []string{"plan.md"}, "root": dir,
		"extract": map[string]any{"fields": []string{"wave"}, "format": "json"}})
	if isErr || out["success"] != true || query(out, "data", "results", "plan.md", "data", "wave") != 2.0 {
		t.Errorf("local_extract: %v", out)
	}
	out, isErr = call("local_analyze", map[string]any{"task_type": "exports", "files": []string{"src/store.ts"}, "root": dir})
	if isErr || query(out, "data", "analysis", "src/store.ts", "exports", 0) != "useStore" {
		t.Errorf("local_analyze: %v", out)
	}
	out, isErr = call("local_verify", map[string]any{"task_type": "must_haves", "root": dir, "checks": []any{
		map[string]any{"id": "A", "description": "exports useStore", "file": "src/store.ts", "condition": map[string]any{"type": "exports", "value": "useStore"}},
		map[string]any{"id": "B", "description": "persisted", "file": "src/store.ts", "condition": map[string]any{"type": "semantic", "value": "persisted"}},
	}})
	if isErr || query(out, "data", "passed") != 1.0 || query(out, "data", "results", 1, "error_category") != "model_unavailable" {
		t.Errorf("local_verify: %v", out)
	}
	out, isErr = call("local_generate", map[string]any{"task_type": "summary", "template": "{{who}} did {{#each tasks}}{{name}}{{/each}}",
		"variables": map[string]any{"who": "lm", "tasks": []any{map[string]any{"name": "x"}}}, "root": dir})
	if isErr || query(out, "data", "content") != "lm did x" || query(out, "data", "written") != false {
		t.Errorf("local_generate: %v", out)
	}
	out, isErr = call("local_git", map[string]any{"task_type": "status", "root": dir})
	if isErr || query(out, "data", "modified", 0) != "plan.md" {
		t.Errorf("local_git: %v", out)
	}
	out, isErr = call("generate_list", map[string]any{"root": dir})
	if isErr || len(query(out, "data", "templates").([]any)) != 4 {
		t.Errorf("generate_list: %v", out)
	}

	// failures are isError results with the envelope
	out, isErr = call("local_generate", map[string]any{"template": "{{a}} {{b}}", "root": dir})
	if !isErr || out["error_category"] != "missing_variables" || out["exit_code"] != 2.0 {
		t.Errorf("missing variables over MCP: %v", out)
	}
	out, isErr = call("local_generate", map[string]any{"template": "x{{a}}", "variables": map[string]any{"a": 1},
		"output_path": "../outside.md", "root": dir})
	if !isErr || out["error_category"] != "outside_root" {
		t.Errorf("escaping output_path over MCP: %v", out)
	}
}
