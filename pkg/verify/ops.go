package verify

import "lmtool.dev/lm/pkg/op"

// Ops is local_verify, on the CLI as `lm verify`.
func Ops() []op.Operation {
	return []op.Operation{
		op.New(op.Meta{
			Name: "local_verify", Path: []string{"verify"},
			Callers: op.Agents, PersonFields: []string{"allow_outside_root"},
			Summary: "Run a checklist against files: pass or fail per check, with line evidence",
			Description: "Each check is {id, description, file, condition: {type, value}} with type contains, not_contains, pattern (RE2), " +
				"exports, imports (Go, JS/TS, Python, Rust), file_exists or semantic (judged by the model configured in the [model] table of " +
				"$LM_HOME/config.toml or by LM_MODEL, with its evidence checked against the file and its confidence reported; below " +
				"confidence_threshold the check is an error low_confidence; without a model it reports error_category model_unavailable " +
				"and the other checks still run). The checklist is JSON on stdin, --checks FILE " +
				"(JSON, YAML or TOML) or, over MCP, the checks field. Exit 0 when every check passes, 8 when any fails or cannot be judged, " +
				"2 for a malformed checklist.",
			Examples:  "lm verify < checks.json\nlm verify --checks must-haves.yaml --jq '.data.results[] | select(.status != \"pass\")'",
			StdinText: "checklist",
			Aliases:   map[string][]string{"checks_file": {"checks"}},
			Effect:    op.ReadOnly, Idempotent: true,
		}, Verify),
	}
}
