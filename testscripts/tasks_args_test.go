package testscripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lmtool.dev/lm/pkg/npmtest"
)

// showJS prints the words its script received, as JSON.
const showJS = "console.log('ARGS=' + JSON.stringify(process.argv.slice(2)))\n"

// TestTaskArgumentsReachTheTask runs `lm tasks run show -- --flag -x plain`
// with each installed runner and checks the task received exactly those
// words: the runner's own options (npm's --flag, just's recipe list,
// mise's :::) never see them.
func TestTaskArgumentsReachTheTask(t *testing.T) {
	just := npmtest.Skip(t, "just")
	path := filepath.Dir(just) + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, tc := range []struct {
		runner  string
		files   map[string]string
		args    []string
		want    string
		command []string
	}{
		{"npm", map[string]string{"package.json": `{"name": "p", "private": true, "scripts": {"show": "node show.js"}}`, "package-lock.json": "{}"},
			[]string{"--flag", "-x", "plain"}, `ARGS=["--flag","-x","plain"]`, []string{"npm", "run", "show", "--", "--flag", "-x", "plain"}},
		{"just", map[string]string{"justfile": "show *args:\n\t@node show.js {{args}}\nevil:\n\t@echo EVIL-RAN\n"},
			[]string{"--flag", "-x", "plain"}, `ARGS=["--flag","-x","plain"]`, []string{"just", "--one", "show", "--flag", "-x", "plain"}},
		{"mise", map[string]string{"mise.toml": "[tasks.show]\nrun = \"node show.js\"\n[tasks.evil]\nrun = \"echo EVIL-RAN\"\n"},
			[]string{"--flag", ":::", "evil"}, `ARGS=["--flag",":::","evil"]`, []string{"mise", "run", "show", "--", "--flag", ":::", "evil"}},
		{"make", map[string]string{"Makefile": "show:\n\t@node show.js $(WORDS)\n"},
			[]string{"WORDS=--flag -x plain"}, `ARGS=["--flag","-x","plain"]`, []string{"make", "show", "WORDS=--flag -x plain"}},
	} {
		t.Run(tc.runner, func(t *testing.T) {
			files := map[string]string{"show.js": showJS}
			for k, v := range tc.files {
				files[k] = v
			}
			dir := project(t, files)
			home := t.TempDir()
			if tc.runner == "mise" {
				trust := exec.Command(filepath.Join(filepath.Dir(just), "mise"), "trust", "-q", dir)
				trust.Env = append(os.Environ(), "PATH="+path, "MISE_DATA_DIR="+home, "MISE_STATE_DIR="+home)
				if out, err := trust.CombinedOutput(); err != nil {
					t.Fatalf("mise trust: %v %s", err, out)
				}
			}
			cmd := exec.Command("lm", append([]string{"tasks", "run", "show", "--"}, tc.args...)...)
			cmd.Dir = dir
			cmd.Env = append(lmEnv(home), "PATH="+path, "MISE_DATA_DIR="+home, "MISE_STATE_DIR="+home)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), tc.want) || strings.Contains(string(out), "EVIL-RAN") {
				t.Errorf("lm tasks run show -- %q: %v\n%s\nwant %s", tc.args, err, out, tc.want)
			}
			// lm's own flags before --; the command shows the words where they go.
			command := exec.Command("lm", append([]string{"-r", "--jq", ".argv | join(\" \")", "tasks", "command", "show", "--"}, tc.args...)...)
			command.Dir, command.Env = dir, cmd.Env
			out, err = command.Output()
			if want := strings.Join(tc.command, " "); err != nil || strings.TrimSpace(string(out)) != want {
				t.Errorf("lm tasks command show -- %q: %v %q, want %q", tc.args, err, out, want)
			}
		})
	}
}
