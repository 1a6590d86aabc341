// Package generate fills templates with variables, strictly: spec 001's
// local_generate without a model. Templates use the Handlebars syntax of the
// spec's templates ({{name}}, {{#each}}, {{#if}}, …; see [Template]); a
// variable the template names but the call lacks is an error listing every
// one, and variables the template never uses are reported.
package generate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"

	"lmtool.dev/lm/pkg/confine"
	"lmtool.dev/lm/pkg/helpercall"
	"lmtool.dev/lm/pkg/op"
)

// TaskTypes are spec 001's task types, each the name of a built-in.
var TaskTypes = []string{"summary", "plan", "verification", "state_update"}

// Input is a local_generate call.
type Input struct {
	Template      string         `json:"template,omitempty" jsonschema:"a template name (see lm generate list) or the template text itself"`
	TemplateFile  string         `json:"template_file,omitempty" jsonschema:"read the template from this file"`
	TaskType      string         `json:"task_type,omitempty" jsonschema:"spec 001's task type: the built-in template used when no template is given"`
	Variables     map[string]any `json:"variables,omitempty" jsonschema:"the values: strings, numbers, booleans, lists and objects"`
	VariablesJSON string         `json:"variables_json,omitempty" jsonschema:"variables as a JSON object (the CLI reads it from stdin)"`
	Vars          string         `json:"vars,omitempty" jsonschema:"read variables from this JSON, YAML or TOML file"`
	Var           []string       `json:"var,omitempty" jsonschema:"a string variable as key=value; dotted keys set nested fields; overrides the other sources"`
	OutputPath    string         `json:"output_path,omitempty" jsonschema:"write the result to this file (under root) instead of only returning it"`
	Force         bool           `json:"force,omitempty" jsonschema:"overwrite output_path if it exists"`
	Root          string         `json:"root,omitempty" jsonschema:"the project root: .lm/templates and output_path resolve under it (default: the current directory)"`
	List          bool           `json:"list,omitempty" jsonschema:"list the templates there are, with their origin and variables, in data.templates instead of rendering one"`
	helpercall.Request
}

// RefineSchema lists the task types.
func (*Input) RefineSchema(s *jsonschema.Schema) {
	for _, t := range TaskTypes {
		s.Properties["task_type"].Enum = append(s.Properties["task_type"].Enum, t)
	}
}

// Validate checks that the template comes from exactly one place.
func (in *Input) Validate() error {
	if err := in.CheckSchema(); err != nil {
		return err
	}
	if in.List {
		if in.Template != "" || in.TemplateFile != "" || in.OutputPath != "" {
			return op.Errorf(op.KindInvalid, "list takes no template and no output_path: it lists the templates there are")
		}
		return nil
	}
	if in.Template == "" && in.TemplateFile == "" {
		in.Template = in.TaskType
	}
	if (in.Template == "") == (in.TemplateFile == "") {
		return op.Errorf(op.KindInvalid, "give the template exactly once: a name or text (template), or template_file").
			WithHint("lm generate summary < vars.json, or lm generate --list for the templates there are")
	}
	for _, kv := range in.Var {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return op.Errorf(op.KindInvalid, "--var %q: want KEY=VALUE", kv)
		}
	}
	return nil
}

// Data is local_generate's answer, spec 001's output plus what was used.
type Data struct {
	Content  string   `json:"content"`
	Written  bool     `json:"written"`
	Path     string   `json:"path,omitempty" jsonschema:"where it was written"`
	Template string   `json:"template" jsonschema:"the template's name, file, or inline"`
	Origin   string   `json:"origin" jsonschema:"builtin, project, home, file or inline"`
	Unused   []string `json:"unused" jsonschema:"variables given that the template never uses"`
	// Templates answers list: the catalogue, nothing rendered.
	Templates []Listed `json:"templates,omitempty" jsonschema:"with list: every template, with its origin and variables"`
}

// Output is local_generate's result.
type Output = helpercall.Result[Data]

// Generate renders the template and, with output_path, writes the file.
func Generate(ctx context.Context, env *op.Env, in Input) (Output, error) {
	if in.List {
		templates, err := catalogue(env, in.Root)
		if err != nil {
			return Output{}, err
		}
		d := Data{Unused: []string{}, Templates: templates}
		if err := in.Conform(d); err != nil {
			return Output{}, err
		}
		return helpercall.OK(d, 0), nil
	}
	root, err := confine.For(env, in.Root)
	if err != nil {
		return Output{}, err
	}
	defer root.Close()
	t, d, read, err := load(env, root, in)
	if err != nil {
		return Output{}, err
	}
	vars, n, err := variables(env, root, in)
	if err != nil {
		return Output{}, err
	}
	read += n
	r, err := t.Render(vars)
	var missing *RenderError
	if errors.As(err, &missing) {
		return Output{}, op.Errorf(op.KindInvalid, "%s: %v", d.Template, err).WithCategory("missing_variables").
			WithHint("the template uses: %s", strings.Join(t.Variables(), ", "))
	}
	d.Content, d.Unused = r.Content, []string{}
	for k := range vars {
		if !r.Used[k] {
			d.Unused = append(d.Unused, k)
		}
	}
	sort.Strings(d.Unused)
	if len(d.Unused) > 0 && env.Stderr != nil {
		fmt.Fprintf(env.Stderr, "lm: warning: %s does not use %s\n", d.Template, strings.Join(d.Unused, ", "))
	}
	if in.OutputPath != "" {
		if err := ctx.Err(); err != nil {
			return Output{}, err
		}
		name, err := root.Resolve(in.OutputPath)
		if err != nil {
			return Output{}, err
		}
		// the answer as it will be is checked before the file is written
		written := d
		written.Written, written.Path = true, root.Abs(name)
		if err := in.Conform(written); err != nil {
			return Output{}, err
		}
		path, err := root.WriteFile(name, []byte(d.Content), in.Force)
		if err != nil {
			return Output{}, err
		}
		d.Written, d.Path = true, path
	} else if err := in.Conform(d); err != nil {
		return Output{}, err
	}
	return helpercall.OK(d, read), nil
}

// load finds the template: a file, inline text, or a name.
func load(env *op.Env, root *confine.Root, in Input) (*Template, Data, int64, error) {
	var src Source
	switch {
	case in.TemplateFile != "":
		src = Source{Name: in.TemplateFile, Origin: "file", Path: in.TemplateFile, load: func() ([]byte, error) {
			return readTemplate(in.TemplateFile, func() ([]byte, error) { return confine.ReadInput(env, root, in.TemplateFile, maxTemplateBytes) })
		}}
	case isInline(in.Template):
		t, err := Parse(in.Template)
		if err != nil {
			return nil, Data{}, 0, op.Errorf(op.KindInvalid, "%v", err).WithCategory("template_syntax")
		}
		return t, Data{Template: "inline", Origin: "inline"}, int64(len(in.Template)), nil
	default:
		var err error
		if src, err = newCatalog(root, env.Home).Find(in.Template); err != nil {
			return nil, Data{}, 0, err
		}
	}
	t, data, err := src.Load()
	if err != nil {
		return nil, Data{}, 0, err
	}
	name := src.Name
	if src.Origin == "file" {
		name = src.Path
	}
	return t, Data{Template: name, Origin: src.Origin}, int64(len(data)), nil
}

// variables merges the sources, later ones overriding earlier ones key by
// key: variables, variables_json (stdin), the vars file, then --var.
func variables(env *op.Env, root *confine.Root, in Input) (map[string]any, int64, error) {
	vars := map[string]any{}
	var read int64
	merge := func(m map[string]any) {
		for k, v := range m {
			vars[k] = v
		}
	}
	if in.Variables != nil {
		merge(in.Variables)
	}
	if text := strings.TrimSpace(in.VariablesJSON); text != "" {
		m, err := decodeVars([]byte(text), "json")
		if err != nil {
			return nil, 0, op.Errorf(op.KindInvalid, "variables on stdin: %v", err)
		}
		merge(m)
		read += int64(len(text))
	}
	if in.Vars != "" {
		data, err := confine.ReadInput(env, root, in.Vars, maxTemplateBytes)
		if confine.IsOutside(err) {
			return nil, 0, err
		}
		if err != nil {
			return nil, 0, op.Errorf(op.KindInvalid, "read --vars: %v", err)
		}
		format := strings.TrimPrefix(strings.ToLower(filepath.Ext(in.Vars)), ".")
		m, err := decodeVars(data, format)
		if err != nil {
			return nil, 0, op.Errorf(op.KindInvalid, "%s: %v", in.Vars, err)
		}
		merge(m)
		read += int64(len(data))
	}
	// one JSON shape for every source: objects, lists, json.Number
	raw, err := json.Marshal(vars)
	if err != nil {
		return nil, 0, op.Errorf(op.KindInvalid, "variables: %v", err)
	}
	vars, err = decodeVars(raw, "json")
	if err != nil {
		return nil, 0, err
	}
	for _, kv := range in.Var {
		k, v, _ := strings.Cut(kv, "=")
		if err := setDotted(vars, k, v); err != nil {
			return nil, 0, err
		}
	}
	return vars, read, nil
}

// decodeVars reads an object of variables; numbers stay as written.
func decodeVars(data []byte, format string) (map[string]any, error) {
	var m map[string]any
	var err error
	switch format {
	case "yaml", "yml":
		err = yaml.Unmarshal(data, &m)
	case "toml":
		err = toml.Unmarshal(data, &m)
	default:
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err = dec.Decode(&m); err == nil && dec.More() {
			err = errors.New("more than one JSON value")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("variables must be one %s object: %v", strings.ToUpper(format), err)
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// setDotted sets a.b.c = v, creating objects on the way.
func setDotted(vars map[string]any, key, v string) error {
	parts := strings.Split(key, ".")
	m := vars
	for i, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			if _, exists := m[p]; exists {
				return op.Errorf(op.KindInvalid, "--var %s: %s is not an object", key, strings.Join(parts[:i+1], "."))
			}
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
	return nil
}

// ListInput is a generate_list call.
type ListInput struct {
	Root string `json:"root,omitempty" jsonschema:"the project root whose .lm/templates are listed (default: the current directory)"`
}

// Listed is one template and what it needs.
type Listed struct {
	Source
	Description string   `json:"description,omitempty"`
	Variables   []string `json:"variables" jsonschema:"what the template names: top-level variables, list[].field, obj.field"`
	Error       string   `json:"error,omitempty" jsonschema:"why the template cannot be used"`
}

// List is generate_list (lm generate list): the same answer as
// local_generate with list (lm generate --list), the templates in
// data.templates, so both spellings give one shape.
func List(ctx context.Context, env *op.Env, in ListInput) (Output, error) {
	return Generate(ctx, env, Input{List: true, Root: in.Root})
}

// catalogue is every template by name with its origin and variables.
func catalogue(env *op.Env, rootDir string) ([]Listed, error) {
	root, err := confine.For(env, rootDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	all, err := newCatalog(root, env.Home).All()
	if err != nil {
		return nil, err
	}
	templates := []Listed{}
	for _, s := range all {
		l := Listed{Source: s, Variables: []string{}}
		if t, _, err := s.Load(); err != nil {
			l.Error = err.Error()
		} else {
			l.Description, l.Variables = t.Description, t.Variables()
		}
		templates = append(templates, l)
	}
	return templates, nil
}
