package cappedlog

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func size(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

func TestRotatesKeepingTheNewest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "x.log")
	l, err := Open(path, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 50 {
		if _, err := l.Write([]byte("line " + strconv.Itoa(i) + " of the log\n")); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{path, path + ".1", path + ".2"} {
		if s := size(t, p); s <= 0 || s > 100 {
			t.Errorf("%s: %d bytes, want 1–100", p, s)
		}
	}
	if size(t, path+".3") != -1 {
		t.Error("more copies kept than asked for")
	}
	current, _ := os.ReadFile(path)
	if !strings.HasSuffix(string(current), "line 49 of the log\n") {
		t.Errorf("the newest line is not in the current file: %q", current)
	}
	older, _ := os.ReadFile(path + ".1")
	if !bytes.Contains(older, []byte("of the log")) || bytes.Contains(older, []byte("line 49")) {
		t.Errorf("the first copy: %q", older)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestAppendsToWhatIsThere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	os.WriteFile(path, []byte("before\n"), 0o600)
	l, err := Open(path, 1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	l.Write([]byte("after\n"))
	l.Close()
	if got, _ := os.ReadFile(path); string(got) != "before\nafter\n" {
		t.Fatalf("%q", got)
	}
}

func TestRefusesALimitThatHoldsNothing(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "x.log"), 0, 1); err == nil {
		t.Fatal("a 0-byte log was accepted")
	}
}

// A process whose log follows its standard streams sends what bypasses
// the log (a crash report on stderr) to the current file, after rotations.
func TestFollowStdioAcrossRotations(t *testing.T) {
	if os.Getenv("CAPPEDLOG_CHILD") != "" {
		l, err := Open(os.Getenv("CAPPEDLOG_CHILD"), 64, 1)
		if err != nil {
			panic(err)
		}
		if err := l.FollowStdio(); err != nil {
			panic(err)
		}
		for range 10 {
			l.Write([]byte("through the log, to rotate it\n"))
		}
		os.Stderr.WriteString("straight to stderr\n")
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "x.log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestFollowStdioAcrossRotations$")
	cmd.Env = append(os.Environ(), "CAPPEDLOG_CHILD="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	current, _ := os.ReadFile(path)
	if !strings.Contains(string(current), "straight to stderr") {
		t.Fatalf("stderr did not follow the rotation; current file: %q", current)
	}
}

// Lines hands on whole lines only, however the bytes are cut: a line
// written in pieces comes once it ends, several in one write one by one.
func TestLinesHandsOnWholeLines(t *testing.T) {
	var got []string
	w := Lines(func(line string) error { got = append(got, line); return nil })
	for _, piece := range []string{"fir", "st\nsec", "ond\nthird\n", "unfinished"} {
		if n, err := w.Write([]byte(piece)); err != nil || n != len(piece) {
			t.Fatalf("write %q: %d, %v", piece, n, err)
		}
	}
	if want := []string{"first", "second", "third"}; !slices.Equal(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}
