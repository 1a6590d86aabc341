package generate

import (
	"encoding/json"
	"errors"
	"lmtool.dev/lm/pkg/confine"
	"reflect"
	"strings"
	"testing"
)

func vars(t testing.TB, s string) map[string]any {
	t.Helper()
	m, err := decodeVars([]byte(s), "json")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func render(t *testing.T, tmpl, data string) string {
	t.Helper()
	p, err := Parse(tmpl)
	if err != nil {
		t.Fatalf("parse %q: %v", tmpl, err)
	}
	r, err := p.Render(vars(t, data))
	if err != nil {
		t.Fatalf("render %q: %v", tmpl, err)
	}
	return r.Content
}

func TestRender(t *testing.T) {
	data := `{"name":"lm","n":3,"pi":3.50,"ok":true,"off":false,"none":null,"empty":[],"tags":["a","b"],
		"tasks":[{"name":"one","commit":"e01"},{"name":"two","commit":""}],
		"author":{"name":"Ada","langs":["go"]},"env":{"b":"2","a":"1"}}`
	for _, tc := range []struct{ tmpl, want string }{
		{"Hello {{name}}!", "Hello lm!"},
		{"{{ name }} {{{name}}}", "lm lm"},
		{"{{n}} {{pi}} {{ok}} [{{none}}]", "3 3.50 true []"},
		{"{{tags}} | {{author}}", `a, b | {"langs":["go"],"name":"Ada"}`},
		{"{{author.name}} {{author.langs.0}}", "Ada go"},
		{"{{#each tasks}}{{@index}}:{{name}}={{this.commit}};{{/each}}", "0:one=e01;1:two=;"},
		{"{{#each tags}}{{#if @first}}[{{/if}}{{this}}{{#unless @last}},{{/unless}}{{#if @last}}]{{/if}}{{/each}}", "[a,b]"},
		{"{{#each env}}{{@key}}={{.}} {{/each}}", "a=1 b=2 "},
		{"{{#each empty}}x{{else}}none{{/each}}", "none"},
		{"{{#each none}}x{{else}}none{{/each}}", "none"},
		{"{{#if ok}}yes{{else}}no{{/if}} {{#if off}}yes{{else}}no{{/if}} {{#if empty}}yes{{else}}no{{/if}}", "yes no no"},
		{"{{^off}}inverted{{/off}}", "inverted"},
		{"{{#with author}}{{name}} of {{../name}} and {{@root.name}}{{/with}}", "Ada of lm and lm"},
		{"{{#each tasks}}{{name}}@{{../name}} {{/each}}", "one@lm two@lm "},
		{"a {{! a comment }}b{{!-- {{not}} a tag --}}c", "a bc"},
		{`\{{name}} {{name}}`, "{{name}} lm"},
		{"x  {{~name~}}  y", "xlmy"},
		{"tasks:\n{{#each tasks}}\n  - {{name}}\n{{/each}}\ndone\n", "tasks:\n  - one\n  - two\ndone\n"},
		{"{{#if ok}}\r\nyes\r\n{{else}}\r\nno\r\n{{/if}}\r\n", "yes\r\n"},
		{"  {{! standalone comment }}\nline\n", "line\n"},
		{"{{#if ok}}inline {{/if}}kept\n", "inline kept\n"},
	} {
		t.Run(tc.tmpl, func(t *testing.T) {
			if got := render(t, tc.tmpl, data); got != tc.want {
				t.Errorf("%q:\n got %q\nwant %q", tc.tmpl, got, tc.want)
			}
		})
	}
}

func TestMissingVariablesAreAllListed(t *testing.T) {
	p, err := Parse("{{a}} {{b.c}} {{#each items}}{{name}} {{price}}{{/each}} {{#if flag}}{{/if}} {{a}} {{#each n}}{{/each}}")
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Render(vars(t, `{"b":{}, "items":[{"name":"x"},{"price":1}], "n": "three"}`))
	var re *RenderError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v", err)
	}
	want := []string{"a", "b.c", "items[0].price", "items[1].name", "flag"}
	if !reflect.DeepEqual(re.Missing, want) {
		t.Errorf("missing = %q, want %q", re.Missing, want)
	}
	if len(re.Problems) != 1 || re.Problems[0] != "n is a string, and #each needs a list or an object" {
		t.Errorf("problems = %q", re.Problems)
	}
}

func TestUsedVariables(t *testing.T) {
	p, _ := Parse("{{a}}{{#each list}}{{x}}{{../b}}{{/each}}{{#with o}}{{@root.c}}{{/with}}")
	r, err := p.Render(vars(t, `{"a":1,"b":2,"c":3,"list":[{"x":1}],"o":{},"spare":0}`))
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, k := range []string{"a", "b", "c", "list", "o", "spare"} {
		if r.Used[k] {
			got = append(got, k)
		}
	}
	if strings.Join(got, ",") != "a,b,c,list,o" {
		t.Errorf("used = %v", got)
	}
}

func TestVariablesAndDescription(t *testing.T) {
	p, err := Parse("{{!-- Says hello. --}}\n{{greeting}} {{#each people}}{{name}} {{#with pet}}{{kind}}{{/with}}{{/each}}{{@root.sign}}")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"greeting", "people", "people[].name", "people[].pet", "people[].pet.kind", "sign"}
	if got := p.Variables(); !reflect.DeepEqual(got, want) {
		t.Errorf("variables = %q", got)
	}
	if p.Description != "Says hello." {
		t.Errorf("description = %q", p.Description)
	}
}

func TestSyntaxErrors(t *testing.T) {
	for tmpl, want := range map[string]string{
		"{{name":                           "line 1 column 1: {{ is never closed with }}",
		"a\n {{#each x}}":                  "line 2 column 2: {{#each x}} is never closed",
		"{{#each x}}{{/if}}":               "{{/if}} closes {{#each x}}",
		"{{/each}}":                        "{{/each}} closes no block",
		"{{else}}":                         "{{else}} outside a block",
		"{{#if a}}{{else}}{{else}}{{/if}}": "a second {{else}}",
		"{{#loop x}}{{/loop}}":             "unknown block {{#loop x}}",
		"{{#if}}{{/if}}":                   "takes exactly one variable",
		"{{upper name}}":                   "helpers and arguments are not supported",
		"{{}}":                             "empty {{ }}",
		"{{a..b}}":                         `invalid variable name "a..b"`,
		"{{@nope}}":                        "unknown data variable",
		"{{!-- open":                       "{{!-- is never closed with --}}",
	} {
		_, err := Parse(tmpl)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", tmpl, err, want)
		}
	}
}

func TestBuiltinsRenderTheSpecExample(t *testing.T) {
	example := `{"phase": "01-data-foundation", "plan": "01", "plan_name": "Herman Family Mock Data",
		"tasks": [{"name": "Update FamilyMember type", "commit": "e012012", "status": "complete"},
		          {"name": "Replace mock data", "commit": "596c479", "status": "complete"}],
		"files_modified": ["src/types/user.ts", "src/utils/mockData.ts"], "deviations": "none", "next_plan": "01-02"}`
	root, err := confine.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	src, err := newCatalog(root, "").Find("summary")
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Render(vars(t, example))
	if err != nil {
		t.Fatal(err)
	}
	want := "# Phase 01-data-foundation, plan 01: Herman Family Mock Data\n\n## Tasks\n\n" +
		"- [x] Update FamilyMember type (`e012012`) — complete\n- [x] Replace mock data (`596c479`) — complete\n\n" +
		"## Files modified\n\n- `src/types/user.ts`\n- `src/utils/mockData.ts`\n\n## Deviations\n\nnone\n\n## Next\n\n01-02\n"
	if r.Content != want {
		t.Errorf("summary:\n%s", r.Content)
	}
}

// FuzzTemplate checks that any text either fails to parse with a
// SyntaxError or renders without panicking, and that rendering is
// deterministic.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"{{a}}", "{{#each l}}{{this}}{{else}}-{{/each}}", "{{#if a}}\n{{/if}}\n", "\\{{x}}", "{{!-- c --}}",
		"{{#with o}}{{../a}}{{@root.a}}{{/with}}", "{{~a~}}", "{{{a}}}", "{{^a}}x{{/a}}", "{{#each o}}{{@key}}{{@index}}{{/each}}"} {
		f.Add(s)
	}
	data := map[string]any{}
	json.Unmarshal([]byte(`{"a":"x","l":[1,{"b":2}],"o":{"k":"v"}}`), &data)
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Parse(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("%q: %T %v", src, err, err)
			}
			return
		}
		r1, err1 := p.Render(data)
		r2, err2 := p.Render(data)
		if r1.Content != r2.Content || (err1 == nil) != (err2 == nil) {
			t.Fatalf("%q renders differently twice", src)
		}
		p.Variables()
	})
}
