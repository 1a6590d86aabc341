package tasks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzedFiles are the files the finders read, so that one target feeds
// arbitrary bytes to every file parser.
var fuzzedFiles = []string{
	"Makefile", "package.json", "pyproject.toml", "Taskfile.yml", "turbo.json", "build.gradle",
	".github/workflows/ci.yml", "docker-compose.yml", "CMakeLists.txt", "justfile",
	".cargo/config.toml", "Makefile.toml", "mise.toml", "deno.json",
}

// FuzzFinders writes arbitrary content into one task file and discovers
// the project's tasks: no finder may panic, and every task listed must be
// runnable (a name and an argument vector) and defined in the project.
func FuzzFinders(f *testing.F) {
	seeds := []string{
		"all: b ## help\ninclude x.mk\n\tcmd\n",
		`{"packageManager":"bun@1","scripts":{"a":"b","c":1}}`,
		"[project.scripts]\na = \"m:f\"\n[tool.hatch.envs.x.scripts]\nb = [\"c\", \"d\"]\n",
		"version: '3'\nincludes:\n  ns: ./Taskfile.yml\ntasks:\n  a: {desc: x}\n  b: echo\n",
		"{ // c\n \"tasks\": { \"a#b\": {}, }, \"pipeline\": [] }",
		"task x {\n}\ntasks.register<Copy>(\"y\")",
		"name: [unclosed",
		"services:\n  db: {image: x}\n  - bad\n",
		"add_custom_target( t COMMAND x)\n",
		"# doc\nbuild a='x:y' *r: dep\n    echo\n[private]\nx:\n",
		"[alias]\nb = [\"build\", \"--release\"]\n",
		"[tasks.a]\nprivate = true\n[tasks.b]\ndescription = 1\n",
		"[tasks]\na = \"echo\"\nb = { run = \"x\", hide = true }\n",
		`{"tasks": {"a": {"command": "x", "description": "y"}, "b": 3}}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		name := fuzzedFiles[int(which)%len(fuzzedFiles)]
		dir := t.TempDir()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		tasks, _, err := discover(dir, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			if task.SourceName == "" || len(task.Argv) == 0 || task.Argv[0] == "" {
				t.Fatalf("%s gave an unrunnable task %+v", name, task)
			}
			if !insideOf(dir)(task.FilePath) {
				t.Fatalf("%s gave a task defined outside the project: %+v", name, task)
			}
		}
	})
}

// FuzzListings feeds arbitrary runner output to the decoders of just's,
// go-task's and mise's machine-readable listings.
func FuzzListings(f *testing.F) {
	f.Add(uint8(0), []byte(`{"recipes":{"a":{"doc":"x","private":false}},"modules":{"m":{"recipes":{"b":{}}}}}`))
	f.Add(uint8(1), []byte(`{"tasks":[{"task":"a","desc":"d","location":{"taskfile":"/x"}}],"namespaces":{"n":{"tasks":[]}}}`))
	f.Add(uint8(1), []byte(`{"tasks":[],"namespaces":{"n":null}}`))
	f.Add(uint8(2), []byte(`[{"name":"a","description":"d","source":"/p/mise.toml"}]`))
	decoders := []func(string, []byte) ([]Task, error){decodeJustDump, decodeTaskList, decodeMiseTasks}
	f.Fuzz(func(t *testing.T, which uint8, out []byte) {
		tasks, err := decoders[int(which)%len(decoders)]("/p", out)
		if err != nil {
			return
		}
		for _, task := range tasks {
			if len(task.Argv) == 0 || task.Argv[0] == "" {
				t.Fatalf("unrunnable task %+v", task)
			}
		}
	})
}

// fuzzRoot is a directory that does not exist, so that resolving symlinks
// leaves fuzzed paths as they are and the properties below can be checked
// on cleaned paths alone.
const fuzzRoot = "/nonexistent-lm-fuzz"

// under is an independent account of "path is dir or below it": a string
// prefix on cleaned paths, whole components only.
func under(path, dir string) bool {
	path, dir = filepath.Clean(path), filepath.Clean(dir)
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// FuzzAllowlistMatcher checks the matcher's promises on arbitrary paths and
// names, including .. segments, doubled slashes and shell metacharacters:
// a Directory entry allows only files below it, a File entry only its file,
// a Task entry only its listed source names, a Deny entry wins over every
// allow, and an empty allowlist allows nothing.
func FuzzAllowlistMatcher(f *testing.F) {
	f.Add("proj", "proj/Makefile", "test", "test")
	f.Add("proj/sub", "proj/sub/../Makefile", "test", "test")
	f.Add("proj/sub", "proj/subway/Makefile", "x", "x")
	f.Add("proj", "proj//./Makefile", "test; rm -rf /", "test")
	f.Add("proj/..", "etc/passwd", "$(id)", "$(id)")
	f.Fuzz(func(t *testing.T, entryRel, fileRel, name, listed string) {
		entryPath := fuzzRoot + "/" + entryRel
		file := fuzzRoot + "/" + fileRel
		if !under(entryPath, fuzzRoot) || !under(file, fuzzRoot) {
			return // .. out of the root reaches real paths, whose symlinks would resolve
		}
		task := Task{FilePath: file, SourceName: name, Name: name}
		check := func(entries ...Entry) Verdict { return Allowlist{Entries: entries}.Check(task) }

		if (Allowlist{}).Allows(task) {
			t.Fatal("an empty allowlist allowed a task")
		}
		if got := check(Entry{Path: entryPath, Scope: ScopeDirectory}); (got == Allowed) != under(file, entryPath) {
			t.Fatalf("Directory %q, file %q: %v", entryPath, file, got)
		}
		if got := check(Entry{Path: entryPath, Scope: ScopeFile}); (got == Allowed) != (filepath.Clean(file) == filepath.Clean(entryPath)) {
			t.Fatalf("File %q, file %q: %v", entryPath, file, got)
		}
		if got := check(Entry{Path: file, Scope: ScopeTask, Tasks: []string{listed}}); (got == Allowed) != (listed == name) {
			t.Fatalf("Task %q listing %q, task %q: %v", file, listed, name, got)
		}
		everything := Entry{Path: "/", Scope: ScopeDirectory}
		deny := Entry{Path: entryPath, Scope: ScopeDeny}
		if got := check(everything, deny); (got == Denied) != under(file, entryPath) {
			t.Fatalf("Deny %q after allowing everything, file %q: %v", entryPath, file, got)
		}
		denyTask := Entry{Path: file, Scope: ScopeDeny, Tasks: []string{listed}}
		if got := check(everything, denyTask); (got == Denied) != (listed == name) {
			t.Fatalf("Deny of task %q, task %q: %v", listed, name, got)
		}
	})
}
