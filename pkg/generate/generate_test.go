package generate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lmtool.dev/lm/pkg/op"
)

func run(t *testing.T, home string, in Input) (Output, error) {
	t.Helper()
	if err := in.Validate(); err != nil {
		return Output{}, err
	}
	return Generate(context.Background(), &op.Env{Home: home, Caller: op.Person()}, in)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTemplateSources(t *testing.T) {
	root, home := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, "templates", "greet.md.hbs"), "home {{who}}")
	write(t, filepath.Join(home, "templates", "summary.md"), "home summary {{who}}")
	write(t, filepath.Join(root, ".lm", "templates", "greet.txt"), "project {{who}}")
	write(t, filepath.Join(root, "t.hbs"), "file {{who}}")
	for _, tc := range []struct {
		in           Input
		want, origin string
	}{
		{Input{Template: "greet"}, "project lm", "project"},
		{Input{Template: "summary"}, "home summary lm", "home"},
		{Input{TaskType: "summary"}, "home summary lm", "home"},
		{Input{TemplateFile: filepath.Join(root, "t.hbs")}, "file lm", "file"},
		{Input{Template: "inline {{who}}"}, "inline lm", "inline"},
	} {
		t.Run(tc.origin, func(t *testing.T) {
			tc.in.Root, tc.in.Var = root, []string{"who=lm"}
			out, err := run(t, home, tc.in)
			if err != nil {
				t.Fatalf("%+v: %v", tc.in, err)
			}
			if out.Data.Content != tc.want || out.Data.Origin != tc.origin || out.Data.Written {
				t.Errorf("%+v: %+v", tc.in, out.Data)
			}
		})
	}
	_, err := run(t, home, Input{Root: root, Template: "nope"})
	if op.KindOf(err) != op.KindNotFound || !strings.Contains(op.EnvelopeOf(err).Suggestion, "greet, plan, state_update, summary, verification") {
		t.Errorf("unknown name: %v (%+v)", err, op.EnvelopeOf(err))
	}
	list, err := List(context.Background(), &op.Env{Home: home, Caller: op.Person()}, ListInput{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range list.Data.Templates {
		got = append(got, l.Name+":"+l.Origin+":"+strings.Join(l.Variables, ","))
	}
	if len(got) != 5 || got[0] != "greet:project:who" || got[3] != "summary:home:who" || !strings.HasPrefix(got[1], "plan:builtin:depends_on,") {
		t.Errorf("list = %q", got)
	}
}

func TestVariableSourcesOverrideInOrder(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "v.yaml"), "b: from-yaml\nc: {d: nested}\n")
	write(t, filepath.Join(dir, "v.toml"), "n = 7\n")
	out, err := run(t, "", Input{Root: dir, Template: "{{a}} {{b}} {{c.d}} {{c.e}}",
		Variables: map[string]any{"a": "obj", "b": "obj"}, VariablesJSON: `{"a": "stdin"}`,
		Vars: filepath.Join(dir, "v.yaml"), Var: []string{"c.e=flag", "unused=1"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Data.Content != "stdin from-yaml nested flag" || strings.Join(out.Data.Unused, ",") != "unused" {
		t.Errorf("%+v", out.Data)
	}
	out, err = run(t, "", Input{Root: dir, Template: "{{n}}", Vars: filepath.Join(dir, "v.toml")})
	if err != nil || out.Data.Content != "7" {
		t.Errorf("toml: %+v %v", out.Data, err)
	}
	for _, in := range []Input{
		{Template: "{{a}}", VariablesJSON: "[1]"},
		{Template: "{{a}}", Var: []string{"novalue"}},
		{Template: "{{a}}", Var: []string{"a=1", "a.b=2"}},
		{},
		{Template: "x {{a}}", TemplateFile: "f"},
	} {
		in.Root = dir
		if _, err := run(t, "", in); op.KindOf(err) != op.KindInvalid {
			t.Errorf("%+v: err = %v", in, err)
		}
	}
}

func TestMissingVariablesExitTwoListingThemAll(t *testing.T) {
	_, err := run(t, "", Input{Root: t.TempDir(), TaskType: "summary", VariablesJSON: `{"phase": "1", "tasks": [{"name": "x"}]}`})
	e := op.EnvelopeOf(err)
	if e.ExitCode != 2 || e.ErrorCategory != "missing_variables" ||
		e.Error != "summary: missing variables: plan, plan_name, tasks[0].commit, tasks[0].status, files_modified, deviations, next_plan" {
		t.Fatalf("%+v", e)
	}
}

func TestOutputPath(t *testing.T) {
	root := t.TempDir()
	in := Input{Root: root, Template: "v{{n}}", Var: []string{"n=1"}, OutputPath: "docs/new/out.md"}
	out, err := run(t, "", in)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "docs", "new", "out.md")
	if !out.Data.Written || out.Data.Path != path {
		t.Fatalf("%+v", out.Data)
	}
	check := func(want string) {
		t.Helper()
		got, _ := os.ReadFile(path)
		if string(got) != want {
			t.Errorf("file holds %q, want %q", got, want)
		}
	}
	check("v1")
	in.Var = []string{"n=2"}
	if _, err := run(t, "", in); op.KindOf(err) != op.KindConflict {
		t.Errorf("overwrite without force: %v", err)
	}
	check("v1")
	in.Force = true
	if _, err := run(t, "", in); err != nil {
		t.Fatal(err)
	}
	check("v2")
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}

	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../escape.md", filepath.Join(outside, "abs.md"), "link/escape.md", "link/deeper/escape.md"} {
		in.OutputPath = name
		if _, err := run(t, "", in); op.KindOf(err) != op.KindDenied {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("wrote outside the root: %v", entries)
	}
	in.OutputPath = "docs"
	if _, err := run(t, "", in); op.KindOf(err) != op.KindConflict {
		t.Errorf("a directory: %v", err)
	}
}
