package extract

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"lmtool.dev/lm/pkg/confine"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/testkit"
)

func TestSplitFrontmatter(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		format   string
		line     int
		fields   map[string]Field
	}{
		{"yaml", "---\nwave: 1\ndepends_on: [a]\n---\nbody", "yaml", 2, map[string]Field{"wave": {1, 2}, "depends_on": {[]any{"a"}, 3}}},
		{"bom crlf blank lines", "\xef\xbb\xbf\r\n\r\n---\r\ntitle: x\r\n...\r\n", "yaml", 4, map[string]Field{"title": {"x", 4}}},
		{"toml", "+++\ntitle = \"t\"\n[meta]\nk = 1\n+++\n", "toml", 2, map[string]Field{"title": {"t", 2}, "meta": {map[string]any{"k": int64(1)}, 3}}},
		{"json", "{\n  \"a\": \"}\",\n  \"b\": 2\n}\ntext", "json", 1, map[string]Field{"a": {"}", 2}, "b": {json.Number("2"), 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := SplitFrontmatter([]byte(tc.in))
			if err != nil || b == nil {
				t.Fatalf("%s: %v %v", tc.name, b, err)
			}
			if b.Format != tc.format || b.Line != tc.line {
				t.Errorf("%s: format %s line %d", tc.name, b.Format, b.Line)
			}
			fields, err := ParseFrontmatter(b)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if !reflect.DeepEqual(fields, tc.fields) {
				t.Errorf("%s: fields = %#v, want %#v", tc.name, fields, tc.fields)
			}
		})
	}
	if b, err := SplitFrontmatter([]byte("# title\n---\na: 1\n---\n")); b != nil || err != nil {
		t.Errorf("no block: %v %v", b, err)
	}
	for _, bad := range []string{"---\na: 1\n", "+++\na = 1", "{\"a\": 1"} {
		if _, err := SplitFrontmatter([]byte(bad)); err == nil {
			t.Errorf("%q: unterminated block accepted", bad)
		}
	}
}

func TestFrontmatterResultMissingFieldsAreNull(t *testing.T) {
	r := frontmatterResult([]byte("---\nwave: 2\n---\n"), []string{"wave", "absent"})
	data := r.Data.(map[string]any)
	if !r.Found || data["wave"] != 2 || data["absent"] != nil || !slices.Equal(r.LineNumbers, []int{2}) {
		t.Errorf("result = %+v", r)
	}
	if _, ok := data["absent"]; !ok {
		t.Error("a missing field must be present as null")
	}
}

func TestMatchPatterns(t *testing.T) {
	src := []byte("alpha\nbeta TODO\r\ngamma TODO TODO\n")
	todo := mustPatterns(t, "TODO")
	r := matchPatterns(src, todo, 10)
	want := []Match{
		{Pattern: "TODO", Line: 2, Column: 6, Match: "TODO", Text: "beta TODO"},
		{Pattern: "TODO", Line: 3, Column: 7, Match: "TODO", Text: "gamma TODO TODO"},
		{Pattern: "TODO", Line: 3, Column: 12, Match: "TODO", Text: "gamma TODO TODO"},
	}
	if !slices.Equal(r.Matches, want) || !slices.Equal(r.LineNumbers, []int{2, 3}) {
		t.Errorf("matches = %+v lines %v", r.Matches, r.LineNumbers)
	}
	if r := matchPatterns(src, todo, 2); !r.Truncated || len(r.Matches) != 2 {
		t.Errorf("limit: %+v", r)
	}

	// Two patterns' matches in file order; a match across lines, and one
	// past the clipped line's end, keep their own text.
	long := strings.Repeat("x", maxLineText) + "END"
	src = []byte("gamma alpha\nalpha\nbeta\n" + long + "\n")
	r = matchPatterns(src, mustPatterns(t, "alpha\nbeta|END", "gamma"), 10)
	want = []Match{
		{Pattern: "gamma", Line: 1, Column: 1, Match: "gamma", Text: "gamma alpha"},
		{Pattern: "alpha\nbeta|END", Line: 2, Column: 1, Match: "alpha\nbeta", Text: "alpha"},
		{Pattern: "alpha\nbeta|END", Line: 4, Column: maxLineText + 1, Match: "END", Text: strings.Repeat("x", maxLineText) + "…"},
	}
	if !slices.Equal(r.Matches, want) || !slices.Equal(r.LineNumbers, []int{1, 2, 4}) {
		t.Errorf("matches = %+v lines %v", r.Matches, r.LineNumbers)
	}
}

// golden compares scanner output with testdata/<file>.json (regenerate by
// deleting the .json file and running the test once).
func TestScannersGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/code/*")
	for _, f := range files {
		if filepath.Ext(f) == ".json" {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		syms, err := Scan(LanguageOf(f), src)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		got, _ := json.MarshalIndent(syms, "", "  ")
		want, err := os.ReadFile(f + ".json")
		if os.IsNotExist(err) {
			os.WriteFile(f+".json", append(got, '\n'), 0o644)
			t.Errorf("%s: wrote golden file; check it", f)
			continue
		}
		if string(want) != string(got)+"\n" {
			t.Errorf("%s: got\n%s\nwant\n%s", f, got, want)
		}
	}
	if len(files) < 8 {
		t.Errorf("only %d golden files", len(files))
	}
}

// testEnv is the person's environment on lm's command line.
func testEnv(t *testing.T) *op.Env {
	env := testkit.Env(t)
	env.Caller = op.Person()
	return env
}

func call(t *testing.T, env *op.Env, in Input) Data {
	t.Helper()
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := Extract(context.Background(), env, in)
	if err != nil {
		t.Fatal(err)
	}
	return *out.Data
}

func TestExtractBatchCacheAndErrors(t *testing.T) {
	root := t.TempDir()
	write := func(name, body string) {
		os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755)
		os.WriteFile(filepath.Join(root, name), []byte(body), 0o644)
	}
	write("a/one.ts", "export const one = 1;\n")
	write("a/deep/two.py", "def two(): pass\n")
	write("a/readme.txt", "text\n")
	write("a/bin.go", "package\x00")
	env := testEnv(t)
	d := call(t, env, Input{TaskType: "exports", Files: []string{"a", "nope.ts"}, Root: root})
	if d.Stats.Files != 5 || d.Stats.Found != 2 || d.Stats.Failed != 3 || d.Stats.Cached != 0 {
		t.Errorf("stats = %+v", d.Stats)
	}
	cats := map[string]string{}
	for name, r := range d.Results {
		cats[name] = r.ErrorCategory
	}
	want := map[string]string{"a/one.ts": "", "a/deep/two.py": "", "a/readme.txt": "unsupported_language", "a/bin.go": "binary_file", "nope.ts": "file_not_found"}
	if !reflect.DeepEqual(cats, want) {
		t.Errorf("categories = %v", cats)
	}
	if got := *d.Results["a/one.ts"].Exports; !slices.Equal(got, []string{"one"}) {
		t.Errorf("exports = %v", got)
	}
	again := call(t, env, Input{TaskType: "exports", Files: []string{"a/**/*.py", "a/*.ts"}, Root: root})
	if again.Stats.Cached != 2 || !slices.Equal(*again.Results["a/deep/two.py"].Exports, []string{"two"}) {
		t.Errorf("second call = %+v", again)
	}
	write("a/one.ts", "export const changed = 1;\n")
	third := call(t, env, Input{TaskType: "exports", Files: []string{"a/one.ts"}, Root: root})
	if third.Stats.Cached != 0 || !slices.Equal(*third.Results["a/one.ts"].Exports, []string{"changed"}) {
		t.Errorf("changed file answered from cache: %+v", third)
	}
}

func TestRootConfinement(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "x.md"), []byte("---\na: 1\n---\n"), 0o644)
	os.Symlink(filepath.Join(outside, "x.md"), filepath.Join(root, "link.md"))
	for _, f := range []string{"../" + filepath.Base(outside) + "/x.md", "link.md", filepath.Join(outside, "x.md")} {
		in := Input{Files: []string{f}, Root: root}
		in.Validate()
		if _, err := Extract(context.Background(), testEnv(t), in); op.KindOf(err) != op.KindDenied {
			t.Errorf("%s: got %v, want denied", f, err)
		}
	}
	// a directory linked from inside the root is walked, by name and by glob
	os.MkdirAll(filepath.Join(root, "real"), 0o755)
	os.WriteFile(filepath.Join(root, "real", "y.md"), []byte("---\nb: 2\n---\n"), 0o644)
	os.Symlink("real", filepath.Join(root, "linkdir"))
	d := call(t, testEnv(t), Input{Files: []string{"linkdir", "linkdir/*.md"}, Root: root})
	if got := slices.Sorted(maps.Keys(d.Results)); !slices.Equal(got, []string{"linkdir/y.md"}) || !d.Results["linkdir/y.md"].Found {
		t.Errorf("linked directory: %+v", d.Results)
	}
	d = call(t, testEnv(t), Input{Files: []string{"link.md"}, Root: root, AllowOutsideRoot: true})
	if !d.Results["link.md"].Found {
		t.Errorf("allow_outside_root: %+v", d.Results)
	}
}

func TestDependencies(t *testing.T) {
	root := t.TempDir()
	for name, body := range map[string]string{
		"go.mod":          "module example.com/m\n",
		"main.go":         "package main\nimport (\"fmt\"; \"example.com/m/lib\")\n",
		"lib/lib.go":      "package lib\nimport \"example.com/m/lib/deeper\"\n",
		"lib/deeper/d.go": "package deeper\n",
		"web/app.ts":      "import { a } from './util';\nimport x from 'lodash';\n",
		"web/util.ts":     "export const a = 1;\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755)
		os.WriteFile(filepath.Join(root, name), []byte(body), 0o644)
	}
	d := call(t, testEnv(t), Input{TaskType: "dependencies", Files: []string{"main.go", "web/app.ts"}, Root: root})
	if deps := d.Results["main.go"].Dependencies; !slices.Equal(deps.Internal, []string{"lib"}) || !slices.Equal(deps.External, []string{"fmt"}) {
		t.Errorf("main.go = %+v", deps)
	}
	if deps := d.Results["web/app.ts"].Dependencies; !slices.Equal(deps.Internal, []string{"web/util.ts"}) || !slices.Equal(deps.External, []string{"lodash"}) {
		t.Errorf("app.ts = %+v", deps)
	}
	if r, ok := d.Results["lib/lib.go"]; !ok || r.Dependencies.Depth != 1 {
		t.Errorf("depth 1 follows one level: %+v", d.Results)
	}
	if _, ok := d.Results["lib/deeper/d.go"]; ok {
		t.Error("depth 1 went two levels deep")
	}
	d = call(t, testEnv(t), Input{TaskType: "dependencies", Files: []string{"main.go"}, Root: root, Depth: 2})
	if _, ok := d.Results["lib/deeper/d.go"]; !ok {
		t.Errorf("depth 2: %v", d.Results)
	}
}

func FuzzSplitFrontmatter(f *testing.F) {
	for _, s := range []string{"---\na: 1\n---\n", "+++\na = 1\n+++\n", "{\"a\": \"}\"}", "\xef\xbb\xbf\n---\r\n...\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := SplitFrontmatter(data)
		if err != nil || b == nil {
			return
		}
		if len(b.Body) > len(data) || b.Line < 1 {
			t.Errorf("block %+v out of its input", b)
		}
		if fields, err := ParseFrontmatter(b); err == nil {
			for k, fl := range fields {
				if fl.Line < b.Line-1 {
					t.Errorf("field %q line %d before the block's %d", k, fl.Line, b.Line)
				}
			}
		}
	})
}

// fuzzScanner checks that a scanner never panics and reports lines within
// the source; check, if not nil, adds the language's own invariants.
func fuzzScanner(f *testing.F, lang string, check func(*testing.T, *Symbols), seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := Scan(lang, src)
		if err != nil {
			return
		}
		if check != nil {
			check(t, s)
		}
		lines := 1 + len(regexp.MustCompile("\n").FindAllIndex(src, -1))
		for _, fn := range *s.Functions {
			if fn.Line < 1 || fn.Line > lines {
				t.Errorf("function %q at line %d of %d", fn.Name, fn.Line, lines)
			}
		}
		for _, im := range *s.Imports {
			if im.Line < 1 || im.Line > lines {
				t.Errorf("import %q at line %d of %d", im.From, im.Line, lines)
			}
		}
		for _, name := range *s.Exports {
			if l := s.ExportLine(name); l < 1 || l > lines {
				t.Errorf("export %q cited at line %d of %d", name, l, lines)
			}
		}
	})
}

func FuzzScanJS(f *testing.F) {
	// Every method is attributed to a class declared before it.
	methodsOfClasses := func(t *testing.T, s *Symbols) {
		for _, fn := range *s.Functions {
			class, _, isMethod := strings.Cut(fn.Name, ".")
			if !isMethod {
				continue
			}
			if !slices.ContainsFunc(*s.Types, func(d TypeDecl) bool { return d.Kind == "class" && d.Name == class && d.Line <= fn.Line }) {
				t.Errorf("method %q at line %d has no class %q before it", fn.Name, fn.Line, class)
			}
		}
	}
	fuzzScanner(f, "typescript", methodsOfClasses,
		"import a, {b as c} from 'x'\nexport default function f(a) {}\n/* x */ const y = (a) => a\n",
		"class A<T> extends B<{x: 1}> {\n  static async *m<U>(a = f(), b: {c: 1}) {}\n  get #p() { return `}` }\n  h = async (e) => {}\n}\n",
		"export abstract class C {\n  @D('x') protected abstract m(): void;\n  n(a: string): void;\n  n(a) { class E { o() {} } }\n}\n",
		"export type A<T = (a: string) => void> = T;\nexport * from './x';\ntype F<T extends {a: '>'}> = T\n",
		"exports.a = exports.b = void 0;\nObject.defineProperty(exports, \"c\", { get() {} });\n(E || (exports.E = E = {}));\n")
}

func FuzzScanPython(f *testing.F) {
	fuzzScanner(f, "python", nil, "from .a import (b,\n c)\nclass X:\n  def m(self): pass\n",
		"'''\nclass X:\n'''\ndef f(): pass\n__all__ = ['f', 'g']\n", "\"\"\"unterminated\nimport os\n")
}

func FuzzScanRust(f *testing.F) {
	fuzzScanner(f, "rust", nil, "use a::{b, c};\npub fn f(x: i32) {}\nmod m;\n")
}

func FuzzScanGo(f *testing.F) {
	fuzzScanner(f, "go", nil, "package p\nimport \"fmt\"\nfunc F(a int) {}\n")
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	text, bin := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.bin")
	os.WriteFile(text, []byte("hello\n"), 0o644)
	os.WriteFile(bin, []byte("x\x00y"), 0o644)
	root, err := confine.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	buf := new([]byte)
	if got, _, ok := readFile(root, "a.txt", 100, buf); !ok || string(got) != "hello\n" {
		t.Errorf("read %q, %v", got, ok)
	}
	for _, tc := range []struct {
		path     string
		limit    int64
		category string
	}{
		{"a.txt", 5, "too_large"},
		{"b.bin", 100, "binary_file"},
		{".", 1 << 20, "file_not_found"},
		{"missing", 100, "file_not_found"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if _, r, ok := readFile(root, tc.path, tc.limit, nil); ok || r.ErrorCategory != tc.category {
				t.Errorf("%s: %v %+v, want %s", tc.path, ok, r, tc.category)
			}
		})
	}
}

// The same bytes mean different things in different languages: the cache
// must not answer a .ts file with what a .txt or .py file of the same
// content yielded.
func TestCacheKeyedByLanguage(t *testing.T) {
	root := t.TempDir()
	src := "def one(): pass\n"
	for _, name := range []string{"a.txt", "b.py", "c.ts"} {
		os.WriteFile(filepath.Join(root, name), []byte(src), 0o644)
	}
	env := testEnv(t)
	for _, name := range []string{"a.txt", "b.py", "c.ts"} {
		call(t, env, Input{TaskType: "functions", Files: []string{name}, Root: root})
	}
	d := call(t, env, Input{TaskType: "functions", Files: []string{"a.txt", "b.py", "c.ts"}, Root: root})
	if r := d.Results["a.txt"]; r.ErrorCategory != "unsupported_language" {
		t.Errorf("a.txt = %+v", r)
	}
	if r := d.Results["b.py"]; r.Language != "python" || len(*r.Functions) != 1 {
		t.Errorf("b.py = %+v", r)
	}
	if r := d.Results["c.ts"]; r.Language != "typescript" || len(*r.Functions) != 0 {
		t.Errorf("c.ts = %+v", r)
	}
	if d.Stats.Cached != 2 { // an unsupported file is answered without reading it
		t.Errorf("cached %d of 2", d.Stats.Cached)
	}
}

// A directory inside a git worktree is walked as git sees it: ignored files
// (by any .gitignore, nested ones too) are left out, untracked ones kept.
func TestWalkRespectsGitignore(t *testing.T) {
	root := t.TempDir()
	git := exec.Command("git", "init", "-q", root)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	for name, body := range map[string]string{
		".gitignore":         "build/\n*.log\n",
		"src/.gitignore":     "generated.md\n",
		"src/plan.md":        "---\na: 1\n---\n",
		"src/generated.md":   "---\na: 2\n---\n",
		"src/debug.log":      "---\na: 3\n---\n",
		"build/out.md":       "---\na: 4\n---\n",
		"notes/untracked.md": "---\na: 5\n---\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755)
		os.WriteFile(filepath.Join(root, name), []byte(body), 0o644)
	}
	d := call(t, testEnv(t), Input{Files: []string{"."}, Root: root, NoCache: true})
	got := slices.Sorted(maps.Keys(d.Results))
	if want := []string{".gitignore", "notes/untracked.md", "src/.gitignore", "src/plan.md"}; !slices.Equal(got, want) {
		t.Errorf("walked %q, want %q", got, want)
	}
	d = call(t, testEnv(t), Input{Files: []string{"**/*.md"}, Root: root, NoCache: true})
	if got := slices.Sorted(maps.Keys(d.Results)); !slices.Equal(got, []string{"notes/untracked.md", "src/plan.md"}) {
		t.Errorf("glob matched %q", got)
	}
}

// Listing a repository's files runs none of the programs its settings name
// (git ls-files would start core.fsmonitor).
func TestWalkRunsNoRepositoryProgram(t *testing.T) {
	root, markers := t.TempDir(), t.TempDir()
	marker := filepath.Join(markers, "fsmonitor-ran")
	for _, args := range [][]string{{"init", "-q"}, {"config", "core.fsmonitor", "touch " + marker + "; false"}} {
		if out, err := exec.Command("git", append([]string{"-C", root}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	os.WriteFile(filepath.Join(root, "a.md"), []byte("---\na: 1\n---\n"), 0o644)
	d := call(t, testEnv(t), Input{Files: []string{"."}, Root: root, NoCache: true})
	if !d.Results["a.md"].Found {
		t.Errorf("walked %+v", d.Results)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the repository's core.fsmonitor ran")
	}
}

// Outside a worktree every file is walked except .git directories.
func TestWalkOutsideGit(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"a.md", "d/b.md", ".git/config", "d/.git/HEAD"} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755)
		os.WriteFile(filepath.Join(root, name), []byte("x\n"), 0o644)
	}
	r, err := confine.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	files, failures, err := Expand(context.Background(), r, nil, []string{"."})
	if err != nil || len(failures) > 0 {
		t.Fatal(err, failures)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Name)
	}
	if !slices.Equal(got, []string{"a.md", "d/b.md"}) {
		t.Errorf("walked %q", got)
	}
}

// A file whose path is longer than PATH_MAX cannot be opened by its path; it
// is reported with its own error saying so, not as a missing file, and not
// by vanishing from the results.
func TestPathsPastPathMaxAreReported(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "top.md"), []byte("---\ntitle: top\n---\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// 50 levels of 100-byte names: 5,050 bytes, past Linux's 4,096. Built
	// one directory at a time relative to the last, as no path reaches it.
	fd, err := unix.Open(root, unix.O_DIRECTORY|unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	name100 := strings.Repeat("d", 100)
	for range 50 {
		if err := unix.Mkdirat(fd, name100, 0o700); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, name100, unix.O_DIRECTORY|unix.O_RDONLY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	deep, err := unix.Openat(fd, "deep.md", unix.O_CREAT|unix.O_WRONLY, 0o600)
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(deep)

	data := call(t, testEnv(t), Input{TaskType: "frontmatter", Files: []string{"."}, Root: root})
	if data.Results["top.md"].Error != "" {
		t.Fatalf("top.md: %+v", data.Results["top.md"])
	}
	tooLong := 0
	for name, res := range data.Results {
		if res.ErrorCategory == "path_too_long" && strings.Contains(res.Error, "PATH_MAX") && strings.HasPrefix(name, name100+"/") {
			tooLong++
		}
	}
	if tooLong == 0 || data.Stats.Failed == 0 {
		t.Fatalf("the deep tree vanished from the results: %d results, stats %+v", len(data.Results), data.Stats)
	}
}

// A FIFO named as a file is an error of its own, not an empty file: opened
// without waiting, it would read as nothing, and a pattern not found there
// would be a false answer.
func TestFIFOIsUnreadableNotEmpty(t *testing.T) {
	root := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, task := range []string{"pattern", "frontmatter"} {
		d := call(t, testEnv(t), Input{TaskType: task, Patterns: []string{"x"}, Files: []string{"pipe"}, Root: root})
		if r := d.Results["pipe"]; r.ErrorCategory != "unreadable" || !strings.Contains(r.Error, "not a regular file (a FIFO)") {
			t.Errorf("%s: %+v, want unreadable: not a regular file", task, r)
		}
	}
}
