package verify

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lmtool.dev/lm/pkg/extract"
	"lmtool.dev/lm/pkg/op"
)

func TestVerify(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc Run() { fmt.Println(\"TODO\") }\n"), 0o644)
	in := Input{Root: root, Checks: []Check{
		{ID: "c1", File: "main.go", Condition: Condition{Type: "contains", Value: "Println"}},
		{ID: "c2", File: "main.go", Condition: Condition{Type: "not_contains", Value: "TODO"}},
		{ID: "c3", File: "main.go", Condition: Condition{Type: "exports", Value: "Run"}},
		{ID: "c4", File: "main.go", Condition: Condition{Type: "imports", Value: "fmt"}},
		{ID: "c5", File: "gone.go", Condition: Condition{Type: "file_exists"}},
		{ID: "c6", File: "gone.go", Condition: Condition{Type: "contains", Value: "x"}},
		{ID: "c7", File: "../escape.go", Condition: Condition{Type: "contains", Value: "x"}},
	}}
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := Verify(context.Background(), &op.Env{Caller: op.Person()}, in)
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{ID: "c1", Status: "pass", Evidence: "line 5: func Run() { fmt.Println(\"TODO\") }"},
		{ID: "c2", Status: "fail", Evidence: "line 5: func Run() { fmt.Println(\"TODO\") }", Reason: "main.go contains \"TODO\""},
		{ID: "c3", Status: "pass", Evidence: "line 5: func Run() { fmt.Println(\"TODO\") }"},
		{ID: "c4", Status: "pass", Evidence: "line 3: import \"fmt\""},
		{ID: "c5", Status: "fail", Evidence: "not found", Reason: "gone.go does not exist"},
	}
	for i, w := range want {
		if got := out.Data.Results[i]; got != w {
			t.Errorf("check %s:\n got %+v\nwant %+v", w.ID, got, w)
		}
	}
	if r := out.Data.Results[5]; r.Status != "error" || r.ErrorCategory != "file_not_found" {
		t.Errorf("missing file: %+v", r)
	}
	if r := out.Data.Results[6]; r.Status != "error" || r.ErrorCategory != "outside_root" {
		t.Errorf("escaping path: %+v", r)
	}
	if out.Data.Passed != 3 || out.Data.Failed != 2 || out.Data.Errors != 2 || out.ExitCode() != 8 {
		t.Errorf("counts %d/%d/%d exit %d", out.Data.Passed, out.Data.Failed, out.Data.Errors, out.ExitCode())
	}
}

// Binary and oversized files exist but are not read: checks on their
// content are errors that say why, file_exists passes.
func TestBinaryAndOversizedFilesAreSkipped(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "logo.png"), []byte("\x89PNG\x00\x01"), 0o644)
	big, err := os.Create(filepath.Join(root, "huge.txt"))
	if err != nil {
		t.Fatal(err)
	}
	big.Truncate(extract.DefaultMaxFileBytes + 1) // sparse: nothing is written
	big.Close()
	in := Input{Root: root, Checks: []Check{
		{ID: "b1", File: "logo.png", Condition: Condition{Type: "contains", Value: "PNG"}},
		{ID: "b2", File: "logo.png", Condition: Condition{Type: "file_exists"}},
		{ID: "h1", File: "huge.txt", Condition: Condition{Type: "pattern", Value: "x"}},
		{ID: "h2", File: "huge.txt", Condition: Condition{Type: "file_exists"}},
		{ID: "o1", File: "../elsewhere", Condition: Condition{Type: "file_exists"}},
	}}
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := Verify(context.Background(), &op.Env{Caller: op.Person()}, in)
	if err != nil {
		t.Fatal(err)
	}
	r := out.Data.Results
	if r[0].Status != "error" || r[0].ErrorCategory != "binary_file" || r[0].Evidence != "not read" {
		t.Errorf("binary content check: %+v", r[0])
	}
	if r[1].Status != "pass" || r[1].Evidence != "logo.png: 6 bytes" {
		t.Errorf("binary file_exists: %+v", r[1])
	}
	if r[2].Status != "error" || r[2].ErrorCategory != "too_large" {
		t.Errorf("oversized content check: %+v", r[2])
	}
	if r[3].Status != "pass" {
		t.Errorf("oversized file_exists: %+v", r[3])
	}
	if r[4].Status != "error" || r[4].ErrorCategory != "outside_root" {
		t.Errorf("file_exists outside the root: %+v", r[4])
	}
	if out.BytesRead != 0 {
		t.Errorf("bytes_read = %d, want 0", out.BytesRead)
	}
}

func TestMalformedChecklists(t *testing.T) {
	for _, in := range []Input{
		{},
		{Checklist: "[]", ChecksFile: "x.json"},
		{Checklist: "{\"checks\": 3}"},
		{Checklist: "[{\"id\": \"a\", \"file\": \"f\", \"condition\": {\"type\": \"pattern\", \"value\": \"(\"}}]"},
		{Checklist: "[{\"id\": \"a\", \"file\": \"f\", \"condition\": {\"type\": \"contains\"}}]"},
		{Checklist: "[{\"id\": \"a\", \"file\": \"f\", \"extra\": 1, \"condition\": {\"type\": \"contains\", \"value\": \"v\"}}]"},
		{Checklist: "[{\"id\": \"a\", \"file\": \"f\", \"condition\": {\"type\": \"file_exists\"}}, {\"id\": \"a\", \"file\": \"g\", \"condition\": {\"type\": \"file_exists\"}}]"},
	} {
		if err := in.Validate(); op.KindOf(err) != op.KindInvalid {
			t.Errorf("%+v: got %v, want invalid input", in, err)
		}
	}
}

func TestAllowOutsideRoot(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "project")
	os.Mkdir(root, 0o755)
	os.WriteFile(filepath.Join(parent, "shared.go"), []byte("package shared\n"), 0o644)
	checks := []Check{{ID: "s", File: "../shared.go", Condition: Condition{Type: "contains", Value: "package shared"}}}
	for _, allow := range []bool{false, true} {
		out, err := Verify(context.Background(), &op.Env{Caller: op.Person()}, Input{Root: root, AllowOutsideRoot: allow, Checks: checks})
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: "error", true: "pass"}[allow]
		if r := out.Data.Results[0]; r.Status != want {
			t.Errorf("allow_outside_root %v: %+v", allow, r)
		}
	}
}

// exports checks on code nobody here wrote cite the declaration, not the
// doc comment above it, and pass on names a barrel re-exports with *.
func TestExportsOnRealCode(t *testing.T) {
	gojq, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/itchyny/gojq").Output()
	if err != nil {
		t.Fatalf("gojq's source (a dependency, MIT): %v", err)
	}
	sdk, _ := filepath.Abs("../../testdata/node/node_modules/@modelcontextprotocol/sdk")
	if _, err := os.Stat(sdk); err != nil {
		if os.Getenv("LM_REQUIRE_NODE") != "" {
			t.Fatal(err)
		}
		t.Skipf("needs npm ci --prefix testdata/node: %v", err)
	}
	for _, tc := range []struct {
		root, file, name, evidence string
	}{
		{strings.TrimSpace(string(gojq)), "compiler.go", "Compile", "line 76: func Compile(q *Query, options ...CompilerOption) (*Code, error) {"},
		{sdk, "dist/esm/client/index.js", "Client", "line 96: export class Client extends Protocol {"},
		{sdk, "dist/cjs/client/index.d.ts", "Client", "line 110: export declare class Client<"},
		{sdk, "dist/esm/experimental/index.js", "TaskSchema", "line 12: export * from './tasks/index.js';"},
		{sdk, "dist/cjs/experimental/index.js", "InMemoryTaskStore", `line 28: __exportStar(require("./tasks/index.js"), exports);`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Root: tc.root, Checks: []Check{{ID: tc.name, File: tc.file, Condition: Condition{Type: "exports", Value: tc.name}}}}
			if err := in.Validate(); err != nil {
				t.Fatal(err)
			}
			out, err := Verify(context.Background(), &op.Env{Caller: op.Person()}, in)
			if err != nil {
				t.Fatal(err)
			}
			if r := out.Data.Results[0]; r.Status != "pass" || !strings.HasPrefix(r.Evidence, tc.evidence) {
				t.Errorf("%s exports %s: %+v, want evidence %q", tc.file, tc.name, r, tc.evidence)
			}
		})
	}
}
