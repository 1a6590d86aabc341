// Package mcpschema says whether MCP clients accept a tool's schemas. The
// MCP schema (2024-11-05 to 2025-11-25) asks of a tool's inputSchema and
// outputSchema only that the root is {"type": "object"}, that every entry
// of its properties is an object and that required lists names; the
// official TypeScript SDK 1.x client enforces exactly that, and fails a
// whole tools/list over one tool that breaks it.
package mcpschema

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// ToolProblems lists what clients reject in a tool as it is sent in
// tools/list (its JSON); none means they accept it.
func ToolProblems(tool []byte) []string {
	var t map[string]json.RawMessage
	if err := json.Unmarshal(tool, &t); err != nil {
		return []string{fmt.Sprintf("the tool is not a JSON object: %v", err)}
	}
	var problems []string
	for _, key := range []string{"inputSchema", "outputSchema"} {
		raw, ok := t[key]
		if !ok {
			if key == "inputSchema" {
				problems = append(problems, "it has no inputSchema")
			}
			continue
		}
		var schema any
		if err := json.Unmarshal(raw, &schema); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", key, err))
			continue
		}
		for _, p := range RootProblems(schema) {
			problems = append(problems, key+": "+p)
		}
	}
	return problems
}

// RootProblems lists what clients reject in a tool's root schema (decoded
// JSON).
func RootProblems(root any) []string {
	obj, ok := root.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("the root is %s, not an object schema", jsonType(root))}
	}
	var problems []string
	if obj["type"] != "object" {
		problems = append(problems, fmt.Sprintf(`the root's type is %v, not "object"`, obj["type"]))
	}
	props := map[string]any{}
	if raw, ok := obj["properties"]; ok {
		if props, ok = raw.(map[string]any); !ok {
			problems = append(problems, fmt.Sprintf("properties is %s, not an object", jsonType(raw)))
		}
	}
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := props[name].(map[string]any); !ok {
			problems = append(problems, fmt.Sprintf("property %q is %s, not an object schema", name, jsonValue(props[name])))
		}
	}
	if raw, ok := obj["required"]; ok {
		list, isList := raw.([]any)
		if !isList || slices.ContainsFunc(list, func(v any) bool { _, s := v.(string); return !s }) {
			problems = append(problems, fmt.Sprintf("required is %s, not a list of names", jsonValue(raw)))
		}
	}
	return problems
}

func jsonValue(v any) string {
	if b, ok := v.(bool); ok {
		return fmt.Sprintf("the boolean schema %v", b)
	}
	return jsonType(v)
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
