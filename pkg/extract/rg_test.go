package extract

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rgMatch is one match as rg --json reports it.
type rgMatch struct {
	Line, Column int
	Match        string
}

// rgText is rg's text-or-bytes: text when valid UTF-8, else base64 bytes.
type rgText struct {
	Text  *string `json:"text"`
	Bytes string  `json:"bytes"`
}

func (t rgText) String() string {
	if t.Text != nil {
		return *t.Text
	}
	b, _ := base64.StdEncoding.DecodeString(t.Bytes)
	return string(b)
}

// ripgrep runs rg --json over dir and gathers its matches by file.
func ripgrep(t *testing.T, dir, pattern string) map[string][]rgMatch {
	t.Helper()
	cmd := exec.Command("rg", "--json", "--hidden", "--no-ignore", "--", pattern, ".")
	cmd.Dir = dir
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
		err = nil // no match
	}
	if err != nil {
		t.Fatalf("rg %s: %v", pattern, err)
	}
	found := map[string][]rgMatch{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Type string
			Data struct {
				Path       rgText
				Lines      rgText
				LineNumber int `json:"line_number"`
				Submatches []struct {
					Match rgText
					Start int
				}
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != "match" {
			continue
		}
		name := strings.TrimPrefix(ev.Data.Path.String(), "./")
		if len(ev.Data.Submatches) == 0 {
			// rg's JSON drops the submatch of an empty match at the end
			// of a last line without a newline ($ there), keeping the
			// line: that match is at the line's end.
			line := ev.Data.Lines.String()
			found[name] = append(found[name], rgMatch{ev.Data.LineNumber, len(line) + 1, ""})
		}
		for _, s := range ev.Data.Submatches {
			found[name] = append(found[name], rgMatch{ev.Data.LineNumber, s.Start + 1, s.Match.String()})
		}
	}
	return found
}

// TestPatternMatchesAgreeWithRipgrep searches a generated tree with lm and
// with rg, file for file: the same files match, at the same lines and
// columns, with the same text. rg is the reference the search is measured
// against. The patterns are those Go's RE2 and rg's regex read alike: not
// \b, nor a negated class meeting invalid UTF-8, which rg's Unicode-aware
// engine reads otherwise; and no match across lines, which rg never makes.
func TestPatternMatchesAgreeWithRipgrep(t *testing.T) {
	if _, err := exec.LookPath("rg"); err != nil {
		if os.Getenv("LM_REQUIRE_RG") == "1" {
			t.Fatal("LM_REQUIRE_RG=1 but ripgrep (rg) is not installed")
		}
		t.Skip("ripgrep (rg) is not installed (set LM_REQUIRE_RG=1 to make this a failure)")
	}
	root := t.TempDir()
	pieces := []string{"TODO_", "TODO", "todo", "fix", "x", "y", "xy", "func ", "Foo", "é", "\xff", " ", " ", "_", "7", "\n", "\n", "\r\n", "\t"}
	rng := rand.New(rand.NewPCG(7, 18))
	for i := range 400 {
		var b strings.Builder
		for range rng.IntN(300) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		dir := filepath.Join(root, fmt.Sprintf("d%d", i%9), fmt.Sprintf("e%d", i%4))
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "binary.bin"), []byte("\x00TODO_skipped\n"), 0o644)
	for _, pattern := range []string{
		`TODO_[A-Za-z0-9_]+`, `TODO`, `func [A-Z][a-z]+`, `x+y`, `^x`, `y$`, `\r$`,
		`(?i)todo_?`, `é+`, `[0-9]+_`, `fix|Foo`, `TODO[a-z_ ]*x`, `^$`, `^`, `$`,
	} {
		want := ripgrep(t, root, pattern)
		d := call(t, testEnv(t), Input{TaskType: "pattern", Patterns: []string{pattern}, Files: []string{"."}, Root: root})
		got := map[string][]rgMatch{}
		for name, r := range d.Results {
			for _, m := range r.Matches {
				got[name] = append(got[name], rgMatch{m.Line, m.Column, m.Match})
			}
		}
		if len(want) == 0 {
			t.Fatalf("%s: rg found nothing: the comparison would test nothing", pattern)
		}
		for _, name := range slices.Sorted(mapsKeys(want, got)) {
			if !slices.Equal(got[name], want[name]) {
				t.Errorf("%s in %s:\n lm %v\n rg %v", pattern, name, got[name], want[name])
			}
		}
		if r := d.Results["binary.bin"]; r.ErrorCategory != "binary_file" {
			t.Errorf("binary.bin: %+v, want binary_file (rg skips it too)", r)
		}
	}
}

// mapsKeys iterates the keys of both maps, each once.
func mapsKeys(a, b map[string][]rgMatch) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range a {
			if !yield(k) {
				return
			}
		}
		for k := range b {
			if _, dup := a[k]; !dup && !yield(k) {
				return
			}
		}
	}
}
