package extract

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"lmtool.dev/lm/pkg/confine"
	"lmtool.dev/lm/pkg/npmtest"
)

// These tests hold the scanners to the tools people trust on real code:
// Node's own require and import for JavaScript exports, Python's ast for
// Python, TypeScript's declaration output for type aliases.

// sdkDir is the official MCP TypeScript SDK as installed for the tests
// (testdata/node, MIT): TypeScript's own CommonJS and declaration output.
func sdkDir(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	dir, _ := filepath.Abs("../../testdata/node/node_modules/@modelcontextprotocol/sdk")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "dist", "cjs"))
	}
	if err != nil || node == "" {
		if npmtest.Required() {
			t.Fatalf("node and testdata/node's @modelcontextprotocol/sdk are required: %v", err)
		}
		t.Skipf("needs node and npm ci --prefix testdata/node: %v", err)
	}
	return dir
}

// nodeKeys runs testdata/cjs_exports.js, Node's require as the oracle.
func nodeKeys(t *testing.T, dir string, files []string) map[string][]string {
	t.Helper()
	script, _ := filepath.Abs("testdata/cjs_exports.js")
	cmd := exec.Command("node", append([]string{script}, files...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	keys := map[string][]string{}
	if err := json.Unmarshal(out, &keys); err != nil {
		t.Fatalf("node's answer: %v\n%s", err, out)
	}
	return keys
}

func TestCommonJSExportsAgreeWithNode(t *testing.T) {
	dir := sdkDir(t)
	var files []string
	filepath.WalkDir(filepath.Join(dir, "dist", "cjs"), func(path string, d os.DirEntry, err error) error {
		if d.IsDir() && d.Name() == "examples" {
			return filepath.SkipDir // programs that run when required
		}
		if strings.HasSuffix(path, ".js") {
			rel, _ := filepath.Rel(dir, path)
			files = append(files, rel)
		}
		return err
	})
	if len(files) < 50 {
		t.Fatalf("only %d CommonJS files in %s", len(files), dir)
	}
	want := nodeKeys(t, dir, files)
	root, err := confine.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, f := range files {
		content, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		syms, _, err := ScanFile(root, filepath.Join(root.Dir, f), content)
		if err != nil {
			t.Fatal(err)
		}
		got := slices.Sorted(slices.Values(*syms.Exports))
		if w := slices.Sorted(slices.Values(want[f])); !slices.Equal(got, w) {
			t.Errorf("%s:\n lm:   %v\n node: %v", f, got, w)
		}
	}
}

func TestStarReexportsAgreeWithNode(t *testing.T) {
	sdkDir(t) // node is needed
	dir := t.TempDir()
	outside := t.TempDir()
	write := func(dir, name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(outside, "far.mjs", "export const Far = 1;\n")
	rel, _ := filepath.Rel(dir, filepath.Join(outside, "far.mjs"))
	write(dir, "index.mjs", "// a barrel\nexport * from './a.mjs';\nexport * from \"./b.mjs\";\nexport * as ns from './c.mjs';\nexport const Own = 0;\n")
	write(dir, "a.mjs", "export const A = 1;\nexport default function main() {}\nexport * from './index.mjs';\n")
	write(dir, "b.mjs", "export * from './a.mjs';\nexport class B {}\nexport { B as Bee };\n")
	write(dir, "c.mjs", "export const C = 3;\n")
	write(dir, "lone.mjs", "export * from '"+filepath.ToSlash(rel)+"';\nexport * from './a.mjs';\n")

	root, err := confine.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	dir = root.Dir
	for _, name := range []string{"index.mjs", "b.mjs", "lone.mjs"} {
		path := filepath.Join(dir, name)
		content, _ := os.ReadFile(path)
		syms, followed, err := ScanFile(root, path, content)
		if err != nil || !followed {
			t.Fatalf("%s: followed %v, %v", name, followed, err)
		}
		out, err := exec.Command("node", "--input-type=module", "-e",
			"const m = await import(process.argv[1]); console.log(JSON.stringify(Object.keys(m)))", path).Output()
		if err != nil {
			t.Fatalf("node: %v", err)
		}
		var want []string
		json.Unmarshal(out, &want)
		if name == "lone.mjs" {
			want = slices.DeleteFunc(want, func(n string) bool { return n == "Far" }) // outside the root: not read
		}
		if got := slices.Sorted(slices.Values(*syms.Exports)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
			t.Errorf("%s: lm %v, node %v", name, got, want)
		}
	}
	path := filepath.Join(dir, "index.mjs")
	content, _ := os.ReadFile(path)
	syms, _, _ := ScanFile(root, path, content)
	if syms.ExportLine("A") != 2 || syms.ExportLine("B") != 3 || syms.ExportLine("Own") != 5 {
		t.Errorf("export lines: A %d, B %d, Own %d", syms.ExportLine("A"), syms.ExportLine("B"), syms.ExportLine("Own"))
	}
}

// TypeScript writes every type alias of a .d.ts file at the start of a
// line, so a line-anchored search is an exact oracle there.
func TestTypeAliasesAgreeWithDeclarationFiles(t *testing.T) {
	dir := sdkDir(t)
	alias := regexp.MustCompile(`(?m)^(?:export )?(?:declare )?type (\w+)`)
	files, total, withDefaults := 0, 0, 0
	filepath.WalkDir(filepath.Join(dir, "dist", "cjs"), func(path string, d os.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(path, ".d.ts") {
			return err
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		var want []string
		for _, m := range alias.FindAllSubmatchIndex(content, -1) {
			want = append(want, string(content[m[2]:m[3]]))
			if bytes.Contains(content[m[0]:m[0]+bytes.IndexByte(content[m[0]:], '\n')], []byte(" = ")) &&
				bytes.HasPrefix(content[m[3]:], []byte("<")) {
				withDefaults++
			}
		}
		syms, err := Scan("typescript", content)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ty := range *syms.Types {
			if ty.Kind == "type" {
				got = append(got, ty.Name)
			}
		}
		total += len(want)
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
			t.Errorf("%s:\n lm:  %v\n tsc: %v", path, got, want)
		}
		return nil
	})
	if files < 50 || total < 200 || withDefaults == 0 {
		t.Fatalf("%d files, %d aliases, %d generic: not the SDK's declarations", files, total, withDefaults)
	}
}

func TestTypeAliasHeads(t *testing.T) {
	src := "export type A<T = string> = T[];\n" +
		"export type C<T extends object = {}> = { [K in keyof T]: T[K] };\n" +
		"type F<Args extends undefined | ((a: string) => void) = undefined> =\n  Args;\n" +
		"export type G<T = Map<string, Array<number>>> = T;\n" +
		"type NotAlias<T> ;\n"
	syms, _ := Scan("typescript", []byte(src))
	var got []string
	for _, ty := range *syms.Types {
		got = append(got, ty.Name)
	}
	if want := []string{"A", "C", "F", "G"}; !slices.Equal(got, want) {
		t.Errorf("types = %v, want %v", got, want)
	}
}

// Pygments' files, with code examples inside docstrings and strings, against
// Python's own parser.
func TestPythonStringsAreNotCodeAgreeWithAST(t *testing.T) {
	dir := "testdata/pygments"
	oracle, err := os.ReadFile(filepath.Join(dir, "ast.json"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"html.py", "julia_builtins.py", "lexers_init.py"}
	if _, err := exec.LookPath("python3"); err == nil {
		cmd := exec.Command("python3", append([]string{"ast_oracle.py"}, files...)...)
		cmd.Dir = dir
		fresh, err := cmd.Output()
		if err != nil {
			t.Fatalf("python3: %v", err)
		}
		if !bytes.Equal(bytes.TrimSpace(fresh), bytes.TrimSpace(oracle)) {
			t.Fatalf("testdata/pygments/ast.json is not what python3 says now:\n%s", fresh)
		}
	}
	type found struct {
		Classes [][2]any `json:"classes"`
		Imports [][2]any `json:"imports"`
	}
	var want map[string]found
	if err := json.Unmarshal(oracle, &want); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		content, _ := os.ReadFile(filepath.Join(dir, f))
		syms, _ := Scan("python", content)
		var got found
		for _, ty := range *syms.Types {
			got.Classes = append(got.Classes, [2]any{ty.Name, float64(ty.Line)})
		}
		for _, im := range *syms.Imports {
			got.Imports = append(got.Imports, [2]any{im.From, float64(im.Line)})
		}
		byName := func(a, b [2]any) int {
			if c := strings.Compare(a[0].(string), b[0].(string)); c != 0 {
				return c
			}
			return int(a[1].(float64) - b[1].(float64))
		}
		slices.SortFunc(got.Classes, byName)
		slices.SortFunc(got.Imports, byName)
		if !slices.Equal(got.Classes, want[f].Classes) {
			t.Errorf("%s classes:\n lm:  %v\n ast: %v", f, got.Classes, want[f].Classes)
		}
		if !slices.Equal(got.Imports, want[f].Imports) {
			t.Errorf("%s imports:\n lm:  %v\n ast: %v", f, got.Imports, want[f].Imports)
		}
	}
}
