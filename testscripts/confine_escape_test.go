package testscripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// secret is the content of the file outside the agent's root: no answer
// may ever carry it.
const secret = "TOPSECRET-4c1d"

// escapeProject is an agent's root (where lm mcp starts) beside a
// directory it must not reach. Inside the root: links out (to the secret
// file, to the outside directory, under a non-UTF-8 name), a Makefile linked
// out, a git repository, and a directory that a later step swaps for a link.
func escapeProject(t *testing.T) (root, outside string) {
	t.Helper()
	outside = project(t, map[string]string{
		"secret.txt":  secret + "\n",
		"Makefile":    "stolen:\n\t@echo " + secret + "\n",
		"vars.json":   `{"x": "` + secret + `"}`,
		"checks.json": `[{"id": "` + secret + `", "file": "a.txt", "condition": {"type": "contains", "value": "x"}}]`,
	})
	root = project(t, map[string]string{
		"a.txt":             "inside\n",
		"swap/a.txt":        "inside\n",
		"sub/Makefile":      "inner:\n\t@echo inner\n",
		"caf\xe9/plain.txt": "inside, non-UTF-8 directory\n",
	})
	for link, target := range map[string]string{
		"link-file":       filepath.Join(outside, "secret.txt"),
		"link-dir":        outside,
		"rel-link":        "../" + filepath.Base(outside) + "/secret.txt",
		"caf\xe9-link":    filepath.Join(outside, "secret.txt"),
		"sub/GNUmakefile": filepath.Join(outside, "Makefile"),
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	git := exec.Command("sh", "-c", "git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm init")
	git.Dir = root
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git: %v %s", err, out)
	}
	return root, outside
}

// TestAgentCannotLeaveItsRoot is the attacker's side of every helper an
// agent can call over lm mcp: "..", absolute paths, symlinks out (a file, a
// directory, a relative link, a non-UTF-8 name), and a directory swapped
// for a link between two calls. Nothing outside the root is read (the
// secret never appears in an answer) or written (no file appears outside).
func TestAgentCannotLeaveItsRoot(t *testing.T) {
	root, outside := escapeProject(t)
	home := t.TempDir()
	c := startMCPIn(t, home, root, "escaper")
	rel := "../" + filepath.Base(outside)
	paths := []string{
		rel + "/secret.txt", filepath.Join(outside, "secret.txt"), "link-file", "link-dir/secret.txt",
		"rel-link", "caf*-link", "caf*", "link-dir", "sub/../../" + filepath.Base(outside) + "/secret.txt",
	}
	type call struct {
		tool string
		args map[string]any
	}
	var calls []call
	for _, p := range paths {
		calls = append(calls,
			call{"local_extract", map[string]any{"task_type": "pattern_match", "patterns": []string{"."}, "files": []string{p}}},
			call{"local_extract", map[string]any{"task_type": "pattern_match", "patterns": []string{"."}, "files": []string{p + "/**"}}},
			call{"local_verify", map[string]any{"checks": []any{map[string]any{"id": "c", "file": p, "condition": map[string]any{"type": "contains", "value": "TOP"}}}}},
			call{"local_generate", map[string]any{"template_file": p, "variables": map[string]any{}}},
			call{"local_generate", map[string]any{"template": "{{x}}", "vars": p}},
			call{"local_generate", map[string]any{"template": "x", "output_path": p + "-written", "force": true}},
			call{"local_git", map[string]any{"task_type": "diff", "format": "detailed", "paths": []string{p}}},
			call{"list_tasks", map[string]any{"dir": p}},
		)
	}
	for _, dir := range []string{rel, outside, "link-dir", "/"} {
		calls = append(calls,
			call{"local_extract", map[string]any{"task_type": "pattern_match", "patterns": []string{"."}, "files": []string{"secret.txt"}, "root": dir}},
			call{"local_verify", map[string]any{"root": dir, "checks": []any{map[string]any{"id": "c", "file": "secret.txt", "condition": map[string]any{"type": "contains", "value": "TOP"}}}}},
			call{"local_verify", map[string]any{"checks_file": filepath.Join(dir, "checks.json")}},
			call{"local_generate", map[string]any{"template": "x", "output_path": "written.md", "root": dir}},
			call{"local_git", map[string]any{"task_type": "status", "root": dir}},
			call{"list_tasks", map[string]any{"dir": dir}},
			call{"get_task", map[string]any{"name": "stolen", "dir": dir}},
			call{"run_task", map[string]any{"op": "start", "task": "inner", "cwd": dir}},
		)
	}
	calls = append(calls,
		// The Makefile linked out of sub/ defines nothing an agent can see.
		call{"list_tasks", map[string]any{"dir": "sub"}},
		call{"get_command", map[string]any{"task": "stolen", "dir": "sub"}},
	)
	for _, cl := range calls {
		text, _ := callTool(t, c, cl.tool, cl.args)
		if strings.Contains(text, secret) {
			t.Errorf("%s %v read outside the root: %s", cl.tool, cl.args, text)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 4 {
		t.Errorf("something was written outside the root: %v", entries)
	}

	// A directory read once, then swapped for a link out: the second call
	// reads nothing through it.
	extract := map[string]any{"task_type": "pattern_match", "patterns": []string{"."}, "files": []string{"swap/a.txt", "swap"}}
	if text, isErr := callTool(t, c, "local_extract", extract); isErr || !strings.Contains(text, "inside") {
		t.Fatalf("before the swap: %s", text)
	}
	os.RemoveAll(filepath.Join(root, "swap"))
	os.Symlink(outside, filepath.Join(root, "swap"))
	os.Rename(filepath.Join(outside, "secret.txt"), filepath.Join(outside, "a.txt"))
	for _, cl := range []call{
		{"local_extract", extract},
		{"local_verify", map[string]any{"checks": []any{map[string]any{"id": "c", "file": "swap/a.txt", "condition": map[string]any{"type": "contains", "value": "TOP"}}}}},
		{"local_generate", map[string]any{"template": "x", "output_path": "swap/b.md"}},
		{"run_task", map[string]any{"op": "start", "task": "inner", "cwd": "swap"}},
		{"local_git", map[string]any{"task_type": "diff", "format": "detailed", "paths": []string{"swap/a.txt"}}},
		{"local_git", map[string]any{"task_type": "status", "root": "swap"}},
		{"list_tasks", map[string]any{"dir": "swap"}},
	} {
		if text, _ := callTool(t, c, cl.tool, cl.args); strings.Contains(text, secret) {
			t.Errorf("after the swap, %s read outside the root: %s", cl.tool, text)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "b.md")); err == nil {
		t.Error("generate wrote through the swapped link")
	}

	// Inside the root, a non-UTF-8 name (which JSON cannot carry, so a glob
	// names it) is an ordinary file.
	if text, isErr := callTool(t, c, "local_extract", map[string]any{"task_type": "pattern_match", "patterns": []string{"non-UTF-8"}, "files": []string{"caf*/*.txt"}}); isErr || !strings.Contains(text, "non-UTF-8 directory") {
		t.Errorf("a non-UTF-8 directory inside the root: %s", text)
	}
}
