package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A figure beyond the committed one plus its noise is called worse, on the
// page and on stderr; one within noise, or better, is ok; a new figure has
// nothing to compare with.
func TestCompareFigures(t *testing.T) {
	dir := t.TempDir()
	base, now := filepath.Join(dir, "base.tsv"), filepath.Join(dir, "now.tsv")
	os.WriteFile(base, []byte("wake-up p99\t9\t5\nround trip\t0.99\t0.15\nhop\t0.1\t0.05\n"), 0o644)
	os.WriteFile(now, []byte("wake-up p99\t13.5\t5\nround trip\t1.2\t0.15\nhop\t0.02\t0.05\nnew one\t3\t1\n"), 0o644)
	var out, warn strings.Builder
	if err := compareFigures(base, now, &out, &warn); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| wake-up p99 | 9 | 13.5 | 5 | ok |", "| round trip | 0.99 | 1.2 | 0.15 | **worse** |", "| hop | 0.1 | 0.02 | 0.05 | ok |", "| new one | – | 3 | 1 | no committed figure |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in:\n%s", want, out.String())
		}
	}
	if w := warn.String(); strings.Count(w, "WORSE") != 1 || !strings.Contains(w, "round trip: 1.2, committed 0.99") {
		t.Errorf("stderr: %q", w)
	}
	// Without a committed baseline every figure is new.
	out.Reset()
	if err := compareFigures(filepath.Join(dir, "none.tsv"), now, &out, &warn); err != nil || strings.Contains(out.String(), "| ok |") {
		t.Errorf("%v\n%s", err, out.String())
	}
	// A damaged baseline is an error that names the line.
	os.WriteFile(base, []byte("no tabs here\n"), 0o644)
	if err := compareFigures(base, now, &out, &warn); err == nil || !strings.Contains(err.Error(), "base.tsv:1") {
		t.Errorf("got %v", err)
	}
}
