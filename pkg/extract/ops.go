package extract

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/helpercall"
	"lmtool.dev/lm/pkg/op"
)

// Ops are local_extract (`lm extract`) and local_analyze, its spec-001
// twin for code structure (MCP only: on the CLI it is lm extract --type).
func Ops() []op.Operation {
	return []op.Operation{
		op.New(op.Meta{
			Name: "local_extract", Path: []string{"extract"},
			Callers: op.Agents, PersonFields: []string{"allow_outside_root"},
			Summary: "Extract frontmatter, regex matches or code structure from many files, with line numbers",
			Description: "Task types: frontmatter (YAML ---, TOML +++, JSON {…}; --fields picks fields, missing ones are null), pattern_match " +
				"(--patterns REGEX, RE2 syntax), exports, imports, functions, types, structure (all four) for Go, JavaScript/TypeScript, Python and Rust, " +
				"and dependencies (the import graph, --depth N). Files, directories (walked, .gitignore respected) and globs (** spans directories) " +
				"resolve under --root; results are keyed by file and cached by content hash (--no-cache). A file that fails (unsupported language, " +
				"binary, too large, bad frontmatter) gets an error of its own while the rest of the batch succeeds.",
			Examples: "lm extract --fields wave --fields depends_on '.planning/**/*-PLAN.md'\n" +
				"lm extract --type pattern --patterns 'TODO|FIXME' src\n" +
				"lm extract --type exports src/stores --jq '.data.results | map_values(.exports)'",
			Args:   []string{"files"},
			Effect: op.ReadOnly, Idempotent: true,
		}, Extract),
		op.New(op.Meta{
			Name: "local_analyze", Path: []string{"extract", "analyze"},
			Callers: op.Agents, PersonFields: []string{"allow_outside_root"}, Hidden: true,
			Summary:     "Analyze code structure: dependencies, exports, functions or types per file",
			Description: "Spec 001's local_analyze: the same analysis as local_extract's code tasks, keyed as analysis by file.",
			Args:        []string{"files"},
			Effect:      op.ReadOnly, Idempotent: true,
		}, Analyze),
	}
}

// AnalyzeInput is a local_analyze call.
type AnalyzeInput struct {
	TaskType         string   `json:"task_type" jsonschema:"dependencies, exports, functions, types, imports or structure"`
	Files            []string `json:"files" jsonschema:"files, directories (walked, .gitignore respected) and globs (** for any depth), relative to root"`
	Depth            int      `json:"depth,omitempty" jsonschema:"dependencies: import levels to follow (default 1)"`
	Root             string   `json:"root,omitempty" jsonschema:"the directory paths resolve under (default: the current directory)"`
	AllowOutsideRoot bool     `json:"allow_outside_root,omitempty" jsonschema:"read paths outside root too"`
	NoCache          bool     `json:"no_cache,omitempty" jsonschema:"neither read nor write the content-hash cache"`
	helpercall.Request
}

// RefineSchema lists the task types.
func (*AnalyzeInput) RefineSchema(s *jsonschema.Schema) {
	s.Properties["task_type"].Enum = []any{"dependencies", "exports", "functions", "types", "imports", "structure"}
}

// AnalyzeData is local_analyze's answer.
type AnalyzeData struct {
	TaskType string                `json:"task_type"`
	Analysis map[string]FileResult `json:"analysis"`
	Stats    Stats                 `json:"stats"`
}

// Analyze answers a local_analyze call.
func Analyze(ctx context.Context, env *op.Env, a AnalyzeInput) (helpercall.Result[AnalyzeData], error) {
	in := Input{TaskType: a.TaskType, Files: a.Files, Depth: a.Depth, Root: a.Root, AllowOutsideRoot: a.AllowOutsideRoot, NoCache: a.NoCache}
	if err := a.CheckSchema(); err != nil {
		return helpercall.Result[AnalyzeData]{}, err
	}
	if err := in.Validate(); err != nil {
		return helpercall.Result[AnalyzeData]{}, err
	}
	out, err := Extract(ctx, env, in)
	if err != nil {
		return helpercall.Result[AnalyzeData]{}, err
	}
	d := AnalyzeData{TaskType: out.Data.TaskType, Analysis: out.Data.Results, Stats: out.Data.Stats}
	if err := a.Conform(d); err != nil {
		return helpercall.Result[AnalyzeData]{}, err
	}
	return helpercall.OK(d, out.BytesRead), nil
}
