package tasks

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestUniqifyMatchesDela(t *testing.T) {
	cases := []struct {
		runners []string
		want    []string
	}{
		{[]string{"make", "npm", "uv", "task", "mvn", "just", "sh"}, []string{"m", "n", "u", "t", "mvn", "j", "s"}},
		{[]string{"make", "mvn"}, []string{"m", "mvn"}},
		{[]string{"pnpm", "poetry", "poe"}, []string{"p", "poe", "poe1"}},
		{[]string{"uv", "poetry", "poe"}, []string{"u", "p", "poe"}},
		{[]string{"task", "turbo", "travis"}, []string{"t", "tur", "tra"}},
		{[]string{"act", "act", "act"}, []string{"a", "act", "act1"}},
	}
	for _, c := range cases {
		var ts []Task
		for _, r := range c.runners {
			ts = append(ts, Task{SourceName: "build", Runner: r})
		}
		ts = append(ts, Task{SourceName: "lonely", Runner: "make"})
		uniqify(ts)
		for i, w := range c.want {
			if ts[i].Name != "build-"+w {
				t.Errorf("%v: task %d named %q, want build-%s", c.runners, i, ts[i].Name, w)
			}
		}
		if last := ts[len(ts)-1]; last.Name != "lonely" {
			t.Errorf("a unique name got a suffix: %q", last.Name)
		}
	}
}

func TestResolve(t *testing.T) {
	ts := []Task{{SourceName: "build", Runner: "make", FilePath: "/p/Makefile"}, {SourceName: "build", Runner: "npm", FilePath: "/p/package.json"}, {SourceName: "lint", Runner: "make"}}
	uniqify(ts)
	if got, err := Resolve(ts, "build-n"); err != nil || got.Runner != "npm" {
		t.Fatalf("build-n: %v %v", got, err)
	}
	if got, err := Resolve(ts, "lint"); err != nil || got.Name != "lint" {
		t.Fatalf("lint: %v %v", got, err)
	}
	_, err := Resolve(ts, "build")
	if err == nil || !strings.Contains(err.Error(), "build-m (make from /p/Makefile)") || !strings.Contains(err.Error(), "build-n (npm from /p/package.json)") {
		t.Fatalf("ambiguous build: %v", err)
	}
	if _, err := Resolve(ts, "nope"); err == nil {
		t.Fatal("unknown name resolved")
	}
}

func TestParseJustfileForms(t *testing.T) {
	text := `set shell := ["bash", "-c"]
export FOO := "x"
alias b := build
version := "1"
# Build it
build target="a:b" *rest: dep1 (dep2 "x")
    echo
test: dep1 dep2
@quiet:
    true
param p1 p2='y':
[private]
secret:
_underscore:
[group('ci'), doc("Check all")]
check:
mod sub
import 'other.just'
`
	var got []string
	for _, r := range parseJustfile(text) {
		got = append(got, r.name+"="+r.doc)
	}
	want := []string{"build=Build it", "test=", "quiet=", "param=", "check=Check all"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestParseMakefile(t *testing.T) {
	text := "include a.mk $(X).mk\n-include b.mk\nsinclude c.mk\nA := 1\nB = x:y\n" +
		"all: build ## Build all\n\tcmd: not a target\n## Run tests\ntest:\n.PHONY: all\n%.o: %.c\n_priv:\n" +
		"one two: \\\n  dep\ndefine BLOCK\nfake:\nendef\n$(OUT): in\n"
	targets, includes := parseMakefile(text)
	var got []string
	for _, tg := range targets {
		got = append(got, tg.name+"="+tg.help)
	}
	want := []string{"all=Build all", "test=Run tests", "one=", "two="}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("targets %q, want %q", got, want)
	}
	if !reflect.DeepEqual(includes, []string{"a.mk", "b.mk", "c.mk"}) {
		t.Fatalf("includes %q", includes)
	}
}

func TestShellQuote(t *testing.T) {
	got := ShellQuote([]string{"make", "test", "a b", "it's", "$(rm -rf /)", ""})
	want := `make test 'a b' 'it'\''s' '$(rm -rf /)' ''`
	if got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestAllowlist(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "proj")
	os.MkdirAll(filepath.Join(proj, "sub"), 0o755)
	mk := filepath.Join(proj, "Makefile")
	os.WriteFile(mk, nil, 0o644)
	os.WriteFile(filepath.Join(proj, "sub", "justfile"), nil, 0o644)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	// a link inside the allowed directory to a file outside it
	outside := filepath.Join(dir, "elsewhere.sh")
	os.WriteFile(outside, nil, 0o755)
	if err := os.Symlink(outside, filepath.Join(proj, "sub", "escape.sh")); err != nil {
		t.Fatal(err)
	}
	task := func(file, name string) Task { return Task{FilePath: file, SourceName: name, Name: name} }
	a, err := ParseAllowlist([]byte(`
[[entries]]
path = "` + link + `/Makefile"
scope = "Task"
tasks = ["test"]

[[entries]]
path = "` + proj + `/sub"
scope = "Directory"

[[entries]]
path = "` + proj + `/sub/justfile"
scope = "Deny"
tasks = ["deploy"]
`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		t    Task
		want bool
	}{
		{task(mk, "test"), true},                                         // through the symlinked entry
		{task(filepath.Join(link, "Makefile"), "test"), true},            // through a symlinked task path
		{task(mk, "deploy"), false},                                      // another task of the file
		{task(filepath.Join(proj, "sub", "justfile"), "build"), true},    // directory scope
		{task(filepath.Join(proj, "sub", "justfile"), "deploy"), false},  // deny first
		{task(filepath.Join(proj, "sub", "..", "Makefile"), "x"), false}, // .. does not escape into the directory
		{task(filepath.Join(proj, "subway", "Makefile"), "x"), false},    // prefix by components only
		{task(mk, "test; rm -rf /"), false},                              // metacharacters are just a name
		{task(filepath.Join(proj, "sub", "escape.sh"), "escape"), false}, // a symlink out of the directory
	}
	for _, c := range cases {
		if got := a.Allows(c.t); got != c.want {
			t.Errorf("%s %q: allowed=%v, want %v", c.t.FilePath, c.t.SourceName, got, c.want)
		}
	}
	if (Allowlist{}).Allows(task(mk, "test")) {
		t.Error("an empty allowlist allowed a task")
	}
}

func TestParseAllowlistRejects(t *testing.T) {
	for _, text := range []string{
		"[[entries]]\npath = \"/x\"\nscope = \"Everything\"\n",
		"[[entries]]\npath = \"/x\"\nscoep = \"File\"\n",
		"[[entries]]\nscope = \"File\"\n",
		"entries = 3",
	} {
		if _, err := ParseAllowlist([]byte(text)); err == nil {
			t.Errorf("accepted %q", text)
		}
	}
	a, err := ParseAllowlist([]byte(`entries = [ { path = "/p/package.json", scope = "Task", tasks = ["npm-test"] } ]`))
	if err != nil || len(a.Entries) != 1 || a.Entries[0].Tasks[0] != "npm-test" {
		t.Fatalf("dela's inline form: %v %v", a, err)
	}
}

func TestStripJSONC(t *testing.T) {
	got := string(stripJSONC([]byte("{\n // c\n \"a\": \"x//y\", /* b */ \"b\": [1,2,],\n}")))
	if want := "{\n \n \"a\": \"x//y\",  \"b\": [1,2]\n}"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}

func FuzzParseMakefile(f *testing.F) {
	f.Add("all: b ## help\ninclude x.mk\n\tcmd\n")
	f.Fuzz(func(t *testing.T, s string) { parseMakefile(s) })
}

func FuzzParseJustfile(f *testing.F) {
	f.Add("# doc\nbuild a='x:y' *r: dep\n    echo\n[private]\nx:\n")
	f.Fuzz(func(t *testing.T, s string) { parseJustfile(s) })
}

func FuzzParseAllowlist(f *testing.F) {
	f.Add("[[entries]]\npath = \"/x\"\nscope = \"File\"\n")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAllowlist([]byte(s))
		if err == nil {
			a.Allows(Task{FilePath: "/x", SourceName: "t"})
		}
	})
}

func FuzzStripJSONC(f *testing.F) {
	f.Add(`{"a": "/*x*/", // c
	}`)
	f.Fuzz(func(t *testing.T, s string) { stripJSONC([]byte(s)) })
}
