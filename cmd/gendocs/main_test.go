package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedDocsCurrent fails when man/, completions/, docs/callers.md or
// the README's exit-code table do not match the command tree and the registry: run `make generate` and
// commit the result.
func TestGeneratedDocsCurrent(t *testing.T) {
	repo := filepath.Join("..", "..")
	files, err := render(repo)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(repo, name))
		if err != nil {
			t.Errorf("%s: %v (run make generate)", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run make generate and commit it", name)
		}
	}
	for _, dir := range []string{"man", "completions"} {
		entries, _ := os.ReadDir(filepath.Join(repo, dir))
		for _, e := range entries {
			if _, ok := files[filepath.Join(dir, e.Name())]; !ok {
				t.Errorf("%s/%s is no longer generated from the command tree: delete it", dir, e.Name())
			}
		}
	}
}

// TestManPagesHaveSections checks that every page has the sections people
// look for, and that a synopsis names positional arguments.
func TestManPagesHaveSections(t *testing.T) {
	files, err := render(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if filepath.Dir(name) != "man" {
			continue
		}
		for _, section := range []string{".SH SYNOPSIS", ".SH ENVIRONMENT", ".SH FILES", ".SH EXIT STATUS", ".SH SEE ALSO"} {
			if !bytes.Contains(content, []byte(section+"\n")) {
				t.Errorf("%s has no %s", name, section)
			}
		}
	}
	if page := files["man/lm-queue.1"]; !bytes.Contains(page, []byte("\nlm queue show [options] ID\n")) {
		t.Errorf("lm-queue.1's synopsis does not show lm queue show's argument:\n%s", page[:min(len(page), 600)])
	}
}

// TestWriteReportsFailures: a file that cannot be written fails the run
// instead of leaving a stale copy behind a successful exit.
func TestWriteReportsFailures(t *testing.T) {
	root := t.TempDir()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "README.md"), readme, 0o644)
	os.WriteFile(filepath.Join(root, "man"), []byte("a file where the directory goes"), 0o644)
	if err := write(root); err == nil || !strings.Contains(err.Error(), "man") {
		t.Errorf("write = %v, want the failure to make man/", err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "man")); string(got) != "a file where the directory goes" {
		t.Errorf("the file in the way changed: %q", got)
	}
}

func TestExitTableNeedsItsMarkers(t *testing.T) {
	for _, tc := range []struct{ name, readme string }{
		{"no start", "# lm\n| code | meaning |\n"},
		{"no end", "# lm\n" + exitTableStart + "| 0 | success |\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := withExitTable([]byte(tc.readme)); err == nil {
				t.Errorf("withExitTable(%q) succeeded, want an error naming the missing marker", tc.readme)
			}
		})
	}
	got, err := withExitTable([]byte("before\n" + exitTableStart + "stale\n" + exitTableEnd + "after\n"))
	if err != nil || !strings.Contains(string(got), "| 8 | checks failed") || strings.Contains(string(got), "stale") || !strings.HasSuffix(string(got), exitTableEnd+"after\n") {
		t.Errorf("withExitTable = %q, %v", got, err)
	}
}
