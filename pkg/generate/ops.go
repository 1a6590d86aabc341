package generate

import "lmtool.dev/lm/pkg/op"

// Ops are local_generate (`lm generate`) and generate_list.
func Ops() []op.Operation {
	return []op.Operation{
		op.New(op.Meta{
			Name: "local_generate", Path: []string{"generate"},
			Callers: op.Agents,
			Summary: "Fill a template with variables, strictly, and optionally write the result to a file",
			Description: "The template is a name (built-ins summary, plan, verification, state_update; then .lm/templates/NAME.* of the root " +
				"and $LM_HOME/templates/NAME.*, which override them), the template text itself, or --template-file. Handlebars syntax as in " +
				"spec 001's templates: {{name}}, {{a.b}}, {{#each list}}…{{this}}…{{@index}}…{{else}}…{{/each}}, {{#if x}}…{{else}}…{{/if}}, " +
				"{{#unless x}}, {{#with obj}}, {{../name}}, {{! comment }}; nothing is HTML-escaped. Strict: every variable the template names " +
				"must be given (in #if too: pass false, null or [] to leave a section out), else exit 2 listing all that are missing; variables " +
				"the template never uses are reported in unused. Variables come from a JSON object on stdin, --vars FILE (JSON, YAML, TOML) and " +
				"--var KEY=VALUE, later sources overriding earlier ones. --output-path writes atomically under the root and refuses to replace " +
				"an existing file (exit 4) without --force. --list lists the templates there are instead (as lm generate list does).",
			Examples: "lm generate summary < vars.json\n" +
				"lm generate --vars plan.yaml --output-path .planning/01-PLAN.md plan\n" +
				"lm generate 'Hello {{name}}' --var name=world -r --jq .data.content\n" +
				"lm generate --list -r --jq '.data.templates[].name'",
			Args:      []string{"template"},
			Aliases:   map[string][]string{"output_path": {"output", "o"}},
			StdinText: "variables_json",
			Effect:    op.Destructive, // with force it replaces a file
		}, Generate),
		op.New(op.Meta{
			Name: "generate_list", Path: []string{"generate", "list"},
			Callers:     op.Agents,
			Summary:     "List the templates lm generate knows, with their origin and variables",
			Description: "The same answer as lm generate --list: spec 001's envelope with the templates in data.templates.",
			Examples:    "lm generate list -r --jq '.data.templates[] | \"\\(.name)\\t\\(.variables | join(\", \"))\"'",
			Effect:      op.ReadOnly, Idempotent: true,
		}, List),
	}
}
