package registry

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/mcpschema"
	"lmtool.dev/lm/pkg/op"
)

// TestEveryInputFieldIsDescribed: a field's description is its flag's help
// and its MCP schema's documentation; an undescribed one leaves both users
// guessing.
func TestEveryInputFieldIsDescribed(t *testing.T) {
	for _, o := range All() {
		schema := o.InputSchema()
		for _, name := range op.FieldNames(schema) {
			if schema.Properties[name].Description == "" {
				t.Errorf("%s: input field %q has no description", o.Info().Name, name)
			}
		}
	}
}

// TestSchemasAreWhatMCPClientsAccept walks every input and output schema as
// it goes over the wire and fails on what the MCP schema (2024-11-05 to
// 2025-11-25) or the official SDK clients reject: a root that is not
// {"type":"object"}, a property whose schema is not an object, a required
// name that is not a property. It is stricter than the MCP schema in one
// place: no boolean sub-schema anywhere, since the TypeScript SDK 1.x client
// fails a whole tools/list over one; an "any value" field is a described
// object. `additionalProperties: false`, the closed object, is the one
// boolean every client accepts.
func TestSchemasAreWhatMCPClientsAccept(t *testing.T) {
	for _, o := range All() {
		name := o.Info().Name
		for kind, schema := range map[string]*jsonschema.Schema{"input": o.InputSchema(), "output": o.OutputSchema()} {
			raw, err := json.Marshal(schema)
			if err != nil {
				t.Fatalf("%s: %s schema does not marshal: %v", name, kind, err)
			}
			var root any
			if err := json.Unmarshal(raw, &root); err != nil {
				t.Fatalf("%s: %s schema: %v", name, kind, err)
			}
			for _, problem := range mcpSchemaProblems(root) {
				t.Errorf("%s: %s schema: %s", name, kind, problem)
			}
		}
	}
}

// TestSchemaCheckerFindsWhatClientsReject feeds the checker the schemas the
// SDK 1.x client rejected, so the test above cannot pass by checking nothing.
func TestSchemaCheckerFindsWhatClientsReject(t *testing.T) {
	for _, bad := range []string{
		`{"type":"object","properties":{"capabilities":true}}`,
		`{"type":"object","properties":{"tools":{"type":"array","items":true}}}`,
		`{"type":"object","properties":{"m":{"type":"object","additionalProperties":true}}}`,
		`{"type":"object","properties":{"x":{"anyOf":[{"type":"string"},false]}}}`,
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`,
		`{"type":"array"}`,
		`true`,
	} {
		var root any
		if err := json.Unmarshal([]byte(bad), &root); err != nil {
			t.Fatal(err)
		}
		if len(mcpSchemaProblems(root)) == 0 {
			t.Errorf("%s passed the check", bad)
		}
	}
	var good any
	json.Unmarshal([]byte(`{"type":"object","properties":{"v":{"description":"any JSON value"},"o":{"type":"object","properties":{},"additionalProperties":false}},"required":["v"],"additionalProperties":false}`), &good)
	if p := mcpSchemaProblems(good); len(p) > 0 {
		t.Errorf("a valid schema was rejected: %v", p)
	}
}

// mcpSchemaProblems lists what MCP clients reject in a tool's root schema,
// and any boolean sub-schema below it.
func mcpSchemaProblems(root any) []string {
	problems := mcpschema.RootProblems(root)
	if obj, ok := root.(map[string]any); ok {
		walkSchema("#", obj, &problems)
	}
	return problems
}

// The keywords whose value is one schema, a list of schemas or a map of
// named schemas (JSON Schema 2020-12 and draft-07).
var (
	oneSchema   = []string{"items", "additionalProperties", "additionalItems", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties"}
	schemaLists = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
	schemaMaps  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)

func walkSchema(at string, s map[string]any, problems *[]string) {
	child := func(path string, v any, closedObject bool) {
		switch v := v.(type) {
		case map[string]any:
			walkSchema(path, v, problems)
		case bool:
			if !closedObject || v {
				*problems = append(*problems, fmt.Sprintf("%s is the boolean schema %v; use an object schema", path, v))
			}
		case []any:
			// items as a list (draft-07): handled by schemaLists.
		default:
			*problems = append(*problems, fmt.Sprintf("%s is %s, not a schema", path, op.JSONType(v)))
		}
	}
	for _, k := range oneSchema {
		if v, ok := s[k]; ok {
			child(at+"/"+k, v, k == "additionalProperties")
		}
	}
	for _, k := range schemaLists {
		if list, ok := s[k].([]any); ok {
			for i, v := range list {
				child(fmt.Sprintf("%s/%s/%d", at, k, i), v, false)
			}
		}
	}
	for _, k := range schemaMaps {
		v, ok := s[k]
		if !ok {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			*problems = append(*problems, fmt.Sprintf("%s/%s is %s, not an object", at, k, op.JSONType(v)))
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(m)) {
			child(at+"/"+k+"/"+name, m[name], false)
		}
	}
	if req, ok := s["required"]; ok {
		names, _ := req.([]any)
		props, _ := s["properties"].(map[string]any)
		for _, n := range names {
			if name, isString := n.(string); !isString || props[name] == nil {
				*problems = append(*problems, fmt.Sprintf("%s/required names %v, which is not a property", at, n))
			}
		}
		if names == nil {
			*problems = append(*problems, fmt.Sprintf("%s/required is %s, not a list of names", at, op.JSONType(req)))
		}
	}
}
