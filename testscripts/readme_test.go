package testscripts

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEOutput runs the README's console examples (```console blocks:
// "$ lm …" lines, each followed by the output it shows) on a pseudo-terminal,
// stdout and stderr in the order a person sees them, in a small project with a Makefile and a git
// repository, and checks the output shown. Ids, ages and durations differ
// from run to run and are compared by their shape.
func TestREADMEOutput(t *testing.T) {
	blocks := consoleBlocks(t, "../README.md")
	if len(blocks) < 4 {
		t.Fatalf("README.md has %d console examples, want one per section that shows output", len(blocks))
	}
	for _, b := range blocks {
		t.Run(b.title, func(t *testing.T) {
			dir := readmeProject(t)
			env := append(lmEnv(t.TempDir()), "NO_COLOR=1")
			for _, step := range b.steps {
				cmd := exec.Command("ontty", "-merge", "sh", "-c", step.command)
				cmd.Dir, cmd.Env = dir, env
				out, _ := cmd.CombinedOutput()
				got := normalize(string(out))
				if want := normalize(strings.Join(step.output, "\n")); got != want {
					t.Errorf("$ %s\ngot:\n%s\nwant (README):\n%s", step.command, got, want)
				}
			}
		})
	}
}

type consoleStep struct {
	command string
	output  []string
}

type consoleBlock struct {
	title string
	steps []consoleStep
}

func consoleBlocks(t *testing.T, path string) []consoleBlock {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []consoleBlock
	var cur *consoleBlock
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "#"):
			section = strings.TrimLeft(line, "# ")
		case cur == nil && line == "```console":
			blocks = append(blocks, consoleBlock{title: section})
			cur = &blocks[len(blocks)-1]
		case cur != nil && line == "```":
			cur = nil
		case cur != nil && strings.HasPrefix(line, "$ "):
			cur.steps = append(cur.steps, consoleStep{command: strings.TrimPrefix(line, "$ ")})
		case cur != nil && len(cur.steps) > 0:
			s := &cur.steps[len(cur.steps)-1]
			s.output = append(s.output, line)
		}
	}
	return blocks
}

// readmeProject is the project the README's examples run in: a Makefile
// with two tasks and a git repository with one commit and a change.
func readmeProject(t *testing.T) string {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Makefile", "test: ## run the tests\n\t@echo ok 12 tests\nbuild: ## build bin/app\n\t@echo built\n")
	write("main.go", "package main\n")
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=lm", "-c", "user.email=lm@example.org"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	git("add", "Makefile", "main.go")
	git("commit", "-q", "-m", "start")
	write("main.go", "package main\n\nfunc main() {}\n")
	write("NOTES.md", "todo\n")
	return dir
}

var (
	anID     = regexp.MustCompile(`\b(?:[a-z]_)?0[0-9A-HJKMNP-TV-Z]{7,25}\b`)
	anAge    = regexp.MustCompile(`just now|\b\d+ (?:second|minute|hour|day)s? ago`)
	aTook    = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:ms|s)\b|\b\d+m\d\ds\b`)
	aSize    = regexp.MustCompile(`\b\d+(?:\.\d+)? (?:B|KiB|MiB)\b`)
	aSpacing = regexp.MustCompile(`[ \t]+`)
)

// normalize puts ids, ages, durations and sizes by their shape, and
// column padding as one space, so that only what the README claims counts.
func normalize(s string) string {
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		line = anID.ReplaceAllString(line, "ID")
		line = anAge.ReplaceAllString(line, "AGE")
		line = aTook.ReplaceAllString(line, "TOOK")
		line = aSize.ReplaceAllString(line, "SIZE")
		lines = append(lines, strings.TrimSpace(aSpacing.ReplaceAllString(line, " ")))
	}
	return strings.Join(lines, "\n")
}
