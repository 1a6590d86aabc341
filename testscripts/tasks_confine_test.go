package testscripts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// project writes files under a new directory and returns it.
func project(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// allowOnly writes an MCP allowlist of one Task entry, with extra TOML
// lines (args, env, cwd) when given.
func allowOnly(t *testing.T, home, file, task, extra string) {
	t.Helper()
	entry := fmt.Sprintf("[[entries]]\npath = %q\nscope = \"Task\"\ntasks = [%q]\n%s", file, task, extra)
	if err := os.WriteFile(filepath.Join(home, "mcp_allowlist.toml"), []byte(entry), 0o600); err != nil {
		t.Fatal(err)
	}
}

// markersIn lists the marker files an attack left in dir.
func markersIn(t *testing.T, dir string) []string {
	t.Helper()
	found, _ := filepath.Glob(filepath.Join(dir, "MARKER*"))
	return found
}

// With only make's test allowlisted, nothing an agent adds to it runs
// another recipe or a command of its own: each bypass through what comes
// with an allowed task is refused and leaves no marker, while the task itself
// still runs, and the words the person permits pass.
func TestAgentRunsOnlyTheAllowedMakeRecipe(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is needed (CI installs it)")
	}
	markers := t.TempDir()
	touch := func(name string) string { return "touch " + filepath.Join(markers, name) }
	other := project(t, map[string]string{"Makefile": "test:\n\t" + touch("MARKER-other-test") + "\nevil:\n\t" + touch("MARKER-other-evil") + "\n"})
	dir := project(t, map[string]string{
		"Makefile":     "test:\n\t@echo TEST-RAN $(TESTS)\nevil:\n\t" + touch("MARKER-evil") + "\nbuild:\n\t" + touch("MARKER-build") + "\n",
		"sub/Makefile": "test:\n\t" + touch("MARKER-sub") + "\n",
	})
	home := t.TempDir()
	allowOnly(t, home, filepath.Join(dir, "Makefile"), "test", "")
	c := startMCPIn(t, home, dir, "make-bypass")

	for _, attack := range []map[string]any{
		{"args": []string{"--eval=$(shell " + touch("MARKER-eval") + ")"}},
		{"args": []string{"-f", filepath.Join(other, "Makefile"), "evil"}},
		{"args": []string{"-C", other, "evil"}},
		{"args": []string{"build"}},
		{"args": []string{"evil"}},
		{"args": []string{"TESTS=$(shell " + touch("MARKER-assign") + ")"}},
		{"env": map[string]string{"MAKEFLAGS": "--eval=$(shell " + touch("MARKER-makeflags") + ")"}},
		{"env": map[string]string{"MAKEFILES": filepath.Join(other, "Makefile")}},
		{"env": map[string]string{"SHELL": "/bin/sh", "BASH_ENV": filepath.Join(other, "Makefile")}},
		{"cwd": "sub"},
		{"cwd": other},
		{"cwd": "../" + filepath.Base(other)},
	} {
		args := map[string]any{"op": "start", "task": "test", "wait_ms": 20000}
		for k, v := range attack {
			args[k] = v
		}
		text, isErr := callTool(t, c, "run_task", args)
		if !isErr || !strings.Contains(text, `"exit_code":5`) {
			t.Errorf("%v: not refused: %s", attack, text)
		}
	}
	if got := markersIn(t, markers); len(got) > 0 {
		t.Errorf("an attack ran: %v", got)
	}
	text, isErr := callTool(t, c, "run_task", map[string]any{"op": "start", "task": "test", "wait_ms": 20000})
	if isErr || !strings.Contains(text, "TEST-RAN") || !strings.Contains(text, `"exit_code":0`) {
		t.Errorf("the allowed task: %s", text)
	}
	// Words the person permits reach make; others still do not.
	allowOnly(t, home, filepath.Join(dir, "Makefile"), "test", "args = [\"TESTS=unit*\"]\n")
	text, isErr = callTool(t, c, "run_task", map[string]any{"op": "start", "task": "test", "args": []string{"TESTS=unit-fast"}, "wait_ms": 20000})
	if isErr || !strings.Contains(text, "TEST-RAN unit-fast") {
		t.Errorf("a permitted word: %s", text)
	}
	for _, word := range []string{"evil", "TESTS=unit$(shell touch " + filepath.Join(markers, "MARKER-pattern") + ")", "TESTS=unit`touch x`"} {
		if text, isErr = callTool(t, c, "run_task", map[string]any{"op": "start", "task": "test", "args": []string{word}, "wait_ms": 20000}); !isErr {
			t.Errorf("a word the pattern does not permit, %q: %s", word, text)
		}
	}
	if got := markersIn(t, markers); len(got) > 0 {
		t.Errorf("an attack ran: %v", got)
	}
}

// npm hands everything after -- to the script, so an agent's words are the
// script's arguments, never npm's options (--script-shell would run a
// program of the agent's choosing); npm's environment options are refused.
func TestAgentRunsOnlyTheAllowedNpmScript(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatal("npm is needed (CI installs it)")
	}
	markers := t.TempDir()
	shell := filepath.Join(markers, "shell.sh")
	os.WriteFile(shell, []byte("#!/bin/sh\ntouch "+filepath.Join(markers, "MARKER-shell")+"\n"), 0o755)
	dir := project(t, map[string]string{
		"package.json": `{"name": "p", "private": true, "scripts": {"show": "node show.js"}}`,
		"show.js":      "console.log('ARGS=' + JSON.stringify(process.argv.slice(2)))\n",
	})
	home := t.TempDir()
	allowOnly(t, home, filepath.Join(dir, "package.json"), "show", "")
	c := startMCPIn(t, home, dir, "npm-bypass")

	text, isErr := callTool(t, c, "run_task", map[string]any{"op": "start", "task": "show", "args": []string{"--script-shell=" + shell, "--flag", "-x", "plain"}, "wait_ms": 30000})
	want := `ARGS=[\"--script-shell=` + shell + `\",\"--flag\",\"-x\",\"plain\"]`
	if isErr || !strings.Contains(text, want) {
		t.Errorf("words after the script's name: want %s in %s", want, text)
	}
	for _, env := range []map[string]string{
		{"npm_config_script_shell": shell},
		{"NPM_CONFIG_SCRIPT_SHELL": shell},
		{"NODE_OPTIONS": "--require " + shell},
	} {
		if text, isErr := callTool(t, c, "run_task", map[string]any{"op": "start", "task": "show", "env": env, "wait_ms": 30000}); !isErr {
			t.Errorf("%v: not refused: %s", env, text)
		}
	}
	if got := markersIn(t, markers); len(got) > 0 {
		t.Errorf("an attack ran: %v", got)
	}
	// A variable the person permits is set.
	allowOnly(t, home, filepath.Join(dir, "package.json"), "show", "env = [\"PORT\"]\n")
	if text, isErr := callTool(t, c, "run_task", map[string]any{"op": "start", "task": "show", "env": map[string]string{"PORT": "5173"}, "wait_ms": 30000}); isErr || !strings.Contains(text, `"exit_code":0`) {
		t.Errorf("a permitted variable: %s", text)
	}
}
