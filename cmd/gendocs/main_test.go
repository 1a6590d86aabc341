package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedDocsCurrent fails when man/, completions/ or docs/callers.md
// do not match the command tree and the registry: run `make generate` and
// commit the result.
func TestGeneratedDocsCurrent(t *testing.T) {
	files, err := render()
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join("..", "..")
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
