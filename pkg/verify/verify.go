// Package verify runs a checklist against files: each check names a file and
// a condition (contains, not_contains, pattern, exports, imports,
// file_exists, semantic) and gets pass or fail with line evidence.
package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"

	"lmtool.dev/lm/pkg/confine"
	"lmtool.dev/lm/pkg/extract"
	"lmtool.dev/lm/pkg/helpercall"
	"lmtool.dev/lm/pkg/jsonio"
	"lmtool.dev/lm/pkg/op"
)

// Input is a local_verify call.
type Input struct {
	TaskType         string  `json:"task_type,omitempty" jsonschema:"spec 001's must_haves, patterns, exports or imports: informational, each check has its own type"`
	Checks           []Check `json:"checks,omitempty" jsonschema:"the checklist"`
	ChecksFile       string  `json:"checks_file,omitempty" jsonschema:"read the checklist from this JSON, YAML or TOML file"`
	Checklist        string  `json:"checklist,omitempty" jsonschema:"the checklist as JSON text (a list of checks or {checks: […]}); the CLI reads it from stdin"`
	Root             string  `json:"root,omitempty" jsonschema:"the directory check files resolve under (default: the current directory)"`
	AllowOutsideRoot bool    `json:"allow_outside_root,omitempty" jsonschema:"check files outside root too"`
	helpercall.Request
}

// Check is one requirement.
type Check struct {
	ID          string    `json:"id"`
	Description string    `json:"description,omitempty" yaml:"description" toml:"description"`
	File        string    `json:"file"`
	Condition   Condition `json:"condition"`
}

// Condition is what must hold of the file.
type Condition struct {
	Type  string `json:"type" jsonschema:"contains, not_contains, pattern (RE2), exports, imports, file_exists or semantic"`
	Value string `json:"value,omitempty"`
}

var conditionTypes = []string{"contains", "not_contains", "pattern", "exports", "imports", "file_exists", "semantic"}

// RefineSchema lists the condition types.
func (*Input) RefineSchema(s *jsonschema.Schema) {
	cond := s.Properties["checks"].Items.Properties["condition"].Properties["type"]
	for _, t := range conditionTypes {
		cond.Enum = append(cond.Enum, t)
	}
}

// Validate gathers the checklist from its one source and checks every
// entry, so a malformed checklist is rejected (exit 2) before any file is
// read.
func (in *Input) Validate() error {
	if err := in.CheckSchema(); err != nil {
		return err
	}
	sources := 0
	for _, set := range []bool{len(in.Checks) > 0, in.ChecksFile != "", strings.TrimSpace(in.Checklist) != ""} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		return op.Errorf(op.KindInvalid, "give the checklist exactly once: checks, --checks FILE or JSON on stdin")
	}
	if in.ChecksFile != "" {
		return nil // read and checked by Verify, which knows the caller's root
	}
	if in.Checklist != "" {
		var err error
		if in.Checks, err = decodeChecklist([]byte(in.Checklist), "json"); err != nil {
			return err
		}
	}
	return checkEntries(in.Checks)
}

// checkEntries checks every entry of a checklist.
func checkEntries(checks []Check) error {
	// A checklist with nothing to check would "pass" without looking at
	// anything: a caller who meant to check something lost its checks.
	if len(checks) == 0 {
		return op.Errorf(op.KindInvalid, "the checklist has no checks").
			WithHint(`give at least one {id, description, file, condition: {type, value}}`)
	}
	ids := map[string]bool{}
	for i, c := range checks {
		where := fmt.Sprintf("check %d (%q)", i+1, c.ID)
		switch {
		case c.ID == "":
			return op.Errorf(op.KindInvalid, "check %d has no id", i+1)
		case ids[c.ID]:
			return op.Errorf(op.KindInvalid, "%s: duplicate id", where)
		case c.File == "":
			return op.Errorf(op.KindInvalid, "%s has no file", where)
		case !slices.Contains(conditionTypes, c.Condition.Type):
			return op.Errorf(op.KindInvalid, "%s: unknown condition type %q", where, c.Condition.Type).
				WithHint("types: %s", strings.Join(conditionTypes, ", "))
		case c.Condition.Value == "" && c.Condition.Type != "file_exists":
			return op.Errorf(op.KindInvalid, "%s: condition %s needs a value", where, c.Condition.Type)
		}
		if c.Condition.Type == "pattern" {
			if _, err := regexp.Compile(c.Condition.Value); err != nil {
				return op.Errorf(op.KindInvalid, "%s: pattern: %v", where, err)
			}
		}
		ids[c.ID] = true
	}
	return nil
}

// readChecklist reads a checklist file, its format from the extension: the
// person's from anywhere, anyone else's beneath the root.
func readChecklist(env *op.Env, root *confine.Root, path string) ([]Check, error) {
	data, err := confine.ReadInput(env, root, path, extract.DefaultMaxFileBytes)
	if confine.IsOutside(err) {
		return nil, err
	}
	if err != nil {
		return nil, op.Errorf(op.KindInvalid, "read checklist: %v", err)
	}
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if format == "yml" {
		format = "yaml"
	}
	return decodeChecklist(data, format)
}

// decodeChecklist accepts a list of checks or an object with a checks list.
func decodeChecklist(data []byte, format string) ([]Check, error) {
	var generic any
	var err error
	switch format {
	case "yaml":
		err = yaml.Unmarshal(data, &generic)
	case "toml":
		err = toml.Unmarshal(data, &generic)
	default:
		err = json.Unmarshal(data, &generic)
	}
	if err != nil {
		return nil, op.Errorf(op.KindInvalid, "checklist is not valid %s: %v", strings.ToUpper(format), err)
	}
	if m, ok := generic.(map[string]any); ok {
		generic = m["checks"]
	}
	if _, ok := generic.([]any); !ok {
		return nil, op.Errorf(op.KindInvalid, "checklist must be a list of checks or {\"checks\": [...]}")
	}
	raw, _ := json.Marshal(generic) // one strict decoder for every format
	var checks []Check
	if err := jsonio.DecodeStrict(raw, &checks); err != nil {
		return nil, op.Errorf(op.KindInvalid, "checklist: %v", err).WithHint("a check is {id, description, file, condition: {type, value}}")
	}
	return checks, nil
}

// Result is one check's outcome.
type Result struct {
	ID            string   `json:"id"`
	Status        string   `json:"status" jsonschema:"pass, fail or error (the check could not be judged)"`
	Evidence      string   `json:"evidence" jsonschema:"line N: snippet, or not found"`
	Reason        string   `json:"reason,omitempty" jsonschema:"why it failed"`
	ErrorCategory string   `json:"error_category,omitempty" jsonschema:"for status error: file_not_found, model_unavailable, low_confidence, …"`
	Confidence    *float64 `json:"confidence,omitempty" jsonschema:"semantic checks: the model's confidence"`
}

// Data is local_verify's answer.
type Data struct {
	Passed  int      `json:"passed"`
	Failed  int      `json:"failed"`
	Errors  int      `json:"errors" jsonschema:"checks that could not be judged"`
	Results []Result `json:"results"`
}

// Output is local_verify's result.
type Output = helpercall.Result[Data]

// Verify runs the checklist. The CLI exits 8 when any check did not pass.
func Verify(ctx context.Context, env *op.Env, in Input) (Output, error) {
	root, err := confine.ForOutside(env, in.Root, in.AllowOutsideRoot)
	if err != nil {
		return Output{}, err
	}
	defer root.Close()
	if in.ChecksFile != "" {
		if in.Checks, err = readChecklist(env, root, in.ChecksFile); err != nil {
			return Output{}, err
		}
		if err := checkEntries(in.Checks); err != nil {
			return Output{}, err
		}
	}
	files := &fileCache{root: root, entries: map[string]*cached{}}
	var semantic *judge
	if slices.ContainsFunc(in.Checks, func(c Check) bool { return c.Condition.Type == "semantic" }) {
		semantic = newJudge(env)
	}
	d := Data{Results: []Result{}}
	for _, c := range in.Checks {
		if err := ctx.Err(); err != nil {
			return Output{}, err
		}
		var r Result
		if c.Condition.Type == "semantic" {
			if e := files.get(c.File); e.err != nil {
				r = *e.err
			} else if r, err = semantic.check(ctx, c, e.content); err != nil {
				return Output{}, err
			}
		} else {
			r = files.check(c)
		}
		r.ID = c.ID
		switch r.Status {
		case "pass":
			d.Passed++
		case "fail":
			d.Failed++
		default:
			d.Errors++
		}
		d.Results = append(d.Results, r)
	}
	if err := in.Conform(d); err != nil {
		return Output{}, err
	}
	out := helpercall.OK(d, files.read)
	if semantic != nil {
		out.Confidence, out.TokensUsed = semantic.confidence, semantic.tokens
	}
	if d.Failed+d.Errors > 0 {
		out = out.WithExit(op.KindChecksFailed.ExitCode())
	}
	return out, nil
}

// fileCache reads each file once and scans its symbols at most once.
type fileCache struct {
	root    *confine.Root
	entries map[string]*cached
	read    int64
}

type cached struct {
	path    string
	size    int64 // -1 when the file does not exist (or is outside the root)
	content []byte
	err     *Result
	symbols *extract.Symbols
	scanErr error
}

// get reads a check's file once. Binary files and files over
// extract.DefaultMaxFileBytes exist but are not read: their checks are
// errors saying so.
func (fc *fileCache) get(name string) *cached {
	if e, ok := fc.entries[name]; ok {
		return e
	}
	e := &cached{size: -1}
	fc.entries[name] = e
	outside := func(err error) *cached {
		e.err = &Result{Status: "error", Evidence: "not found", Reason: err.Error(), ErrorCategory: "outside_root"}
		return e
	}
	path, err := fc.root.Resolve(name)
	if err != nil {
		return outside(err)
	}
	st, err := fc.root.Stat(path)
	if confine.IsOutside(err) {
		return outside(err)
	}
	if err == nil && st.Mode().IsRegular() {
		e.size = st.Size()
	}
	content, category, err := extract.ReadText(fc.root, path, extract.DefaultMaxFileBytes)
	if err != nil {
		e.err = &Result{Status: "error", Evidence: "not read", Reason: fmt.Sprintf("%s: %v", name, err), ErrorCategory: category}
		if category == "file_not_found" {
			e.err.Evidence = "not found"
		}
		return e
	}
	e.path, e.content = fc.root.Abs(path), content
	fc.read += int64(len(content))
	return e
}

func (fc *fileCache) check(c Check) Result {
	v := c.Condition.Value
	e := fc.get(c.File)
	if c.Condition.Type == "file_exists" {
		switch {
		case e.size >= 0:
			return Result{Status: "pass", Evidence: fmt.Sprintf("%s: %d bytes", c.File, e.size)}
		case e.err.ErrorCategory == "outside_root": // whether it exists is not ours to say
			return *e.err
		}
		return Result{Status: "fail", Evidence: "not found", Reason: c.File + " does not exist"}
	}
	if e.err != nil {
		return *e.err
	}
	switch c.Condition.Type {
	case "contains", "not_contains":
		at := bytes.Index(e.content, []byte(v))
		if (at >= 0) == (c.Condition.Type == "contains") {
			if at < 0 {
				return Result{Status: "pass", Evidence: "not found"}
			}
			return Result{Status: "pass", Evidence: evidence(e.content, at)}
		}
		if at < 0 {
			return Result{Status: "fail", Evidence: "not found", Reason: fmt.Sprintf("%s does not contain %q", c.File, v)}
		}
		return Result{Status: "fail", Evidence: evidence(e.content, at), Reason: fmt.Sprintf("%s contains %q", c.File, v)}
	case "pattern":
		re := regexp.MustCompile("(?m)" + v) // compiled once already in Validate
		if loc := re.FindIndex(e.content); loc != nil {
			return Result{Status: "pass", Evidence: evidence(e.content, loc[0])}
		}
		return Result{Status: "fail", Evidence: "not found", Reason: fmt.Sprintf("no match for /%s/ in %s", v, c.File)}
	}
	return fc.symbolCheck(c, e)
}

// symbolCheck judges exports and imports from the file's scanned symbols.
func (fc *fileCache) symbolCheck(c Check, e *cached) Result {
	if e.symbols == nil && e.scanErr == nil {
		if extract.LanguageOf(c.File) == "" {
			e.scanErr = fmt.Errorf("unsupported language for %s", c.File)
		} else {
			e.symbols, _, e.scanErr = extract.ScanFile(fc.root, e.path, e.content)
		}
	}
	if e.scanErr != nil {
		return Result{Status: "error", Evidence: "not judged", Reason: e.scanErr.Error(), ErrorCategory: "unsupported_language"}
	}
	v := c.Condition.Value
	if c.Condition.Type == "exports" {
		if slices.Contains(*e.symbols.Exports, v) {
			// the declaration, or the list or star that exports it
			return Result{Status: "pass", Evidence: lineEvidence(e.content, e.symbols.ExportLine(v))}
		}
		return Result{Status: "fail", Evidence: "not found",
			Reason: fmt.Sprintf("%s does not export %s (exports: %s)", c.File, v, strings.Join(*e.symbols.Exports, ", "))}
	}
	for _, im := range *e.symbols.Imports {
		if im.From == v || slices.Contains(im.Items, v) {
			return Result{Status: "pass", Evidence: lineEvidence(e.content, im.Line)}
		}
	}
	return Result{Status: "fail", Evidence: "not found", Reason: fmt.Sprintf("%s does not import %s", c.File, v)}
}

// evidence is "line N: snippet" for the line holding offset at.
func evidence(content []byte, at int) string {
	return lineEvidence(content, 1+bytes.Count(content[:at], []byte{'\n'}))
}

func lineEvidence(content []byte, line int) string {
	lines := bytes.SplitN(content, []byte{'\n'}, line+1)
	text := ""
	if line-1 < len(lines) {
		text = strings.TrimSpace(string(lines[line-1]))
	}
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	return fmt.Sprintf("line %d: %s", line, text)
}
