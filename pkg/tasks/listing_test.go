package tasks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lmtool.dev/lm/pkg/npmtest"
)

// writeFiles creates files (path → content) under dir; names ending in
// ".x" are made executable and lose the suffix.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".x") {
			name, mode = strings.TrimSuffix(name, ".x"), 0o755
		}
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// runnerPath returns a PATH holding the npm-installed runners (and node,
// which runs just's launcher).
func runnerPath(t *testing.T, runner string) string {
	bin := npmtest.Skip(t, runner)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node is not installed: %v", err)
	}
	return filepath.Dir(bin) + string(os.PathListSeparator) + filepath.Dir(node)
}

// discoverWith lists dir's tasks with PATH set to path, by name.
func discoverWith(t *testing.T, dir, path string) map[string]Task {
	t.Helper()
	t.Setenv("PATH", path)
	tasks, problems, err := discover(dir, false)
	if err != nil || len(problems) > 0 {
		t.Fatalf("discover: %v %v", err, problems)
	}
	byName := map[string]Task{}
	for _, task := range tasks {
		if _, dup := byName[task.Name]; dup {
			t.Fatalf("two tasks named %s", task.Name)
		}
		byName[task.Name] = task
	}
	return byName
}

// sameNames checks that every task the parser found keeps its name, runner
// and source name when the runner lists the tasks: names depend on the
// project's files, not on what is installed.
func sameNames(t *testing.T, parsed, listed map[string]Task) {
	t.Helper()
	for name, p := range parsed {
		l, ok := listed[name]
		if !ok || l.Runner != p.Runner || l.SourceName != p.SourceName {
			t.Errorf("%s (%s %s) became %+v once the runner listed the tasks", name, p.Runner, p.SourceName, l)
		}
	}
}

func TestJustListingPreferred(t *testing.T) {
	path := runnerPath(t, "just")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"Makefile":       "deploy:\n\techo make\nbuild:\n\techo make\n",
		"justfile":       "import 'ci.just'\nmod tools\n\n# Build with just\nbuild:\n    echo just\n\n[private]\nsecret:\n    true\n",
		"ci.just":        "# Deploy from the import\ndeploy:\n    echo deploy\n",
		"tools/mod.just": "# Say hello\nhello:\n    echo hello\n",
	})

	parsed := discoverWith(t, dir, t.TempDir())
	listed := discoverWith(t, dir, path)
	sameNames(t, parsed, listed)

	if b := parsed["build-j"]; b.ListedBy != "" || b.Description != "Build with just" {
		t.Errorf("without just, build-j = %+v", b)
	}
	if _, ok := parsed["deploy-j"]; ok {
		t.Error("the parser followed an import it does not read")
	}
	if b := listed["build-j"]; b.ListedBy != "just" || b.Description != "Build with just" {
		t.Errorf("with just, build-j = %+v", b)
	}
	// The import and the module are only known to just. The imported
	// deploy collides with make's, which keeps its bare name.
	if d := listed["deploy-j"]; d.ListedBy != "just" || d.SourceName != "deploy" || d.Description != "Deploy from the import" {
		t.Errorf("deploy from the import: %+v", d)
	}
	if d := listed["deploy"]; d.Runner != "make" {
		t.Errorf("deploy is %+v, want make's", d)
	}
	if h := listed["tools::hello"]; h.Description != "Say hello" || ShellQuote(h.Argv) != "just tools::hello" {
		t.Errorf("module recipe: %+v", h)
	}
	if _, ok := listed["secret"]; ok {
		t.Error("a private recipe was listed")
	}
}

func TestMiseListingPreferred(t *testing.T) {
	path := runnerPath(t, "mise")
	t.Setenv("HOME", t.TempDir()) // mise also reads the user's global configuration
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"mise.toml":                  "[tasks.outer]\nrun = 'echo outer'\n",
		"proj/Makefile":              "build:\n\techo make\n",
		"proj/mise.toml":             "[tasks.build]\ndescription = 'Build with mise'\nrun = 'echo mise'\n",
		"proj/mise-tasks/greet.x":    "#!/bin/sh\n#MISE description=\"Say hello\"\necho hi\n",
		"proj/mise-tasks/sub/deep.x": "#!/bin/sh\necho deep\n",
	})
	dir := filepath.Join(root, "proj")

	parsed := discoverWith(t, dir, t.TempDir())
	listed := discoverWith(t, dir, path)
	sameNames(t, parsed, listed)

	for _, name := range []string{"build-m", "build-mis", "greet"} {
		if _, ok := parsed[name]; !ok {
			t.Errorf("the parser did not find %s", name)
		}
	}
	if b := listed["build-mis"]; b.ListedBy != "mise" || b.Description != "Build with mise" {
		t.Errorf("with mise, build-mis = %+v", b)
	}
	if g := listed["greet"]; g.ListedBy != "mise" || g.Description != "Say hello" {
		t.Errorf("greet = %+v", g)
	}
	// Nested file tasks are only known to mise; the parent directory's
	// tasks are not the project's.
	if d := listed["sub:deep"]; d.ListedBy != "mise" || ShellQuote(d.Argv) != "mise run sub:deep" {
		t.Errorf("sub:deep = %+v", d)
	}
	if _, ok := listed["outer"]; ok {
		t.Error("a task of the parent directory was listed")
	}
}

func TestListingFailureFallsBackToParser(t *testing.T) {
	path := runnerPath(t, "just")
	dir := t.TempDir()
	// just refuses a recipe that depends on one that does not exist; the
	// parser still names the recipes.
	writeFiles(t, dir, map[string]string{"justfile": "build: missing\n    echo b\n"})
	tasks := discoverWith(t, dir, path)
	if b, ok := tasks["build"]; !ok || b.ListedBy != "" {
		t.Fatalf("build = %+v, want the parser's", b)
	}
}

// A confined caller's tasks come from the files alone: mise's listing
// renders the project's templates and env, which run programs once the
// person trusted the directory — and the agent may have written the file.
func TestConfinedListingRunsNoRunner(t *testing.T) {
	path := runnerPath(t, "mise")
	t.Setenv("HOME", t.TempDir())
	dir, markers := t.TempDir(), t.TempDir()
	t.Setenv("MISE_TRUSTED_CONFIG_PATHS", dir) // the person's mise trust
	writeFiles(t, dir, map[string]string{"mise.toml": "[env]\nX = \"{{ exec(command='touch " +
		filepath.Join(markers, "ran") + "') }}\"\n[tasks.build]\nrun = 'echo hi'\n"})
	t.Setenv("PATH", path)
	tasks, _, err := discover(dir, true)
	if err != nil || len(tasks) != 1 || tasks[0].Name != "build" || tasks[0].ListedBy != "" {
		t.Fatalf("confined discovery = %+v, %v", tasks, err)
	}
	if ran, _ := os.ReadDir(markers); len(ran) > 0 {
		t.Fatalf("a confined listing ran the project's program: %v", ran)
	}
	// The person's listing is mise's own, trust and all.
	if tasks, _, _ := discover(dir, false); len(tasks) != 1 || tasks[0].ListedBy != "mise" {
		t.Errorf("the person's discovery = %+v", tasks)
	}
	if _, err := os.Stat(filepath.Join(markers, "ran")); err != nil {
		t.Errorf("mise did not render the trusted template, so this test proves nothing: %v", err)
	}
}

// go-task's listing runs each task's status: commands to say whether it
// is up to date, unless told --no-status. The stand-in behaves so, as go-task
// 3.40 does; its output is 3.40's, which names a task in name alone.
func TestTaskListingRunsNoStatusCommand(t *testing.T) {
	bin, dir, markers := t.TempDir(), t.TempDir(), t.TempDir()
	writeFiles(t, bin, map[string]string{"task.x": `#!/bin/sh
case " $* " in *" --no-status "*) ;; *) touch ` + filepath.Join(markers, "status") + ` ;; esac
echo '{"tasks":[{"name":"build","desc":"Build it","summary":"","aliases":[],"up_to_date":false,"location":{"line":3,"column":3,"taskfile":"` + dir + `/Taskfile.yml"}},
  {"name":"","desc":"","location":{"taskfile":"` + dir + `/Taskfile.yml"}}],"location":"` + dir + `/Taskfile.yml"}'
`})
	writeFiles(t, dir, map[string]string{"Taskfile.yml": "version: '3'\ntasks:\n  build:\n    status: [touch ran]\n    cmds: [echo b]\n"})
	tasks := discoverWith(t, dir, bin)
	if b := tasks["build"]; b.ListedBy != "task" || b.Description != "Build it" || len(tasks) != 1 {
		t.Errorf("listed %+v", tasks)
	}
	if ran, _ := os.ReadDir(markers); len(ran) > 0 {
		t.Errorf("the listing ran the status commands: %v", ran)
	}
}

func TestDecodeTaskList(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"Taskfile.yml": "version: '3'\n"})
	// go-task's editor format, as `task --list-all --json` prints it.
	out := `{"tasks":[
	  {"name":"build","task":"build","desc":"Build it","summary":"","aliases":[],"up_to_date":false,
	   "location":{"line":4,"column":3,"taskfile":"` + dir + `/Taskfile.yml"}},
	  {"name":"docs:serve","task":"docs:serve","desc":"","summary":"Serve the docs","aliases":["s"],
	   "location":{"line":2,"column":3,"taskfile":"` + dir + `/docs/Taskfile.yml"}}
	],"location":"` + dir + `/Taskfile.yml"}`
	tasks, err := decodeTaskList(dir, []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 2 || tasks[0].SourceName != "build" || tasks[0].Description != "Build it" ||
		tasks[1].SourceName != "docs:serve" || tasks[1].Description != "Serve the docs" ||
		tasks[1].FilePath != filepath.Join(dir, "docs", "Taskfile.yml") || ShellQuote(tasks[1].Argv) != "task docs:serve" {
		t.Fatalf("decoded %+v", tasks)
	}
}

func TestMergeNamesExtrasWithoutRenaming(t *testing.T) {
	tasks := []Task{
		{SourceName: "deploy", Runner: "make"},
		{SourceName: "build", Runner: "make"},
		{SourceName: "build", Runner: "just"},
		{SourceName: "gone", Runner: "just"},
		{SourceName: "ci", Runner: "sh"},
	}
	uniqify(tasks)
	listed := []Task{
		{SourceName: "build", Runner: "just", Description: "from just"},
		{SourceName: "deploy", Runner: "just"},
		{SourceName: "fresh", Runner: "just"},
	}
	var got []string
	for _, t := range merge(tasks, "just", listed) {
		got = append(got, t.Name+"/"+t.Runner)
	}
	want := "deploy/make build-m/make build-j/just deploy-j/just fresh/just ci/sh"
	if strings.Join(got, " ") != want {
		t.Fatalf("merged %s, want %s", strings.Join(got, " "), want)
	}
}
