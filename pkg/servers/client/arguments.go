package client

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/op"
)

// schemaOf returns a tool's input schema in the validator's type.
func schemaOf(tool mcp.Tool) (*jsonschema.Schema, error) {
	raw := tool.RawInputSchema
	if len(raw) == 0 {
		var err error
		if raw, err = json.Marshal(tool.InputSchema); err != nil {
			return nil, err
		}
	}
	s := &jsonschema.Schema{}
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("tool %s has an input schema lm cannot read: %w", tool.Name, err)
	}
	return s, nil
}

// Validate checks arguments against a tool's input schema before they are
// sent, and says which argument is wrong and what it should be.
func Validate(tool mcp.Tool, args map[string]any) error {
	s, err := schemaOf(tool)
	if err != nil {
		return op.Errorf(op.KindInvalid, "%w", err)
	}
	for _, name := range s.Required {
		if _, ok := args[name]; !ok {
			return op.Errorf(op.KindInvalid, "tool %s: missing required argument %q (%s)", tool.Name, name, describe(s.Properties[name])).
				WithHint("arguments: %s", signature(s))
		}
	}
	for name, v := range args {
		p, known := s.Properties[name]
		if !known {
			if s.AdditionalProperties != nil && s.AdditionalProperties.Not != nil {
				return op.Errorf(op.KindInvalid, "tool %s: unknown argument %q", tool.Name, name).WithHint("arguments: %s", signature(s))
			}
			continue
		}
		if types := op.SchemaTypes(p); len(types) > 0 && !accepts(types, v) {
			return op.Errorf(op.KindInvalid, "tool %s: argument %q must be %s, got %s", tool.Name, name, strings.Join(types, " or "), op.JSONType(v))
		}
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil // a schema the validator cannot resolve is the server's to enforce
	}
	if err := resolved.Validate(roundTrip(args)); err != nil {
		return op.Errorf(op.KindInvalid, "tool %s: invalid arguments: %v", tool.Name, err).WithHint("arguments: %s", signature(s))
	}
	return nil
}

// roundTrip gives the validator plain JSON values (float64, not int).
func roundTrip(args map[string]any) any {
	data, _ := json.Marshal(args)
	var v any
	json.Unmarshal(data, &v)
	return v
}

func accepts(types []string, v any) bool {
	got := op.JSONType(v)
	for _, t := range types {
		if t == got || (t == "number" && got == "integer") {
			return true
		}
	}
	return false
}

// describe is "string: the message to echo" for an argument's schema.
func describe(p *jsonschema.Schema) string {
	if p == nil {
		return "any type"
	}
	d := strings.Join(op.SchemaTypes(p), " or ")
	if d == "" {
		d = "any type"
	}
	if p.Description != "" {
		d += ": " + p.Description
	}
	return d
}

// signature lists a schema's arguments the way mcptools does:
// "message:string, [count:integer]".
func signature(s *jsonschema.Schema) string {
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	var parts []string
	for _, name := range op.FieldNames(s) {
		p := name + ":" + strings.Join(op.SchemaTypes(s.Properties[name]), "|")
		if !required[name] {
			p = "[" + p + "]"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// ParseArg reads one --arg k=v. The value is converted to the type the
// tool's schema gives the argument (a number, a boolean, JSON for objects
// and arrays); an argument of unknown type is JSON when it parses as JSON,
// else a string.
func ParseArg(s *jsonschema.Schema, kv string) (string, any, error) {
	name, value, ok := strings.Cut(kv, "=")
	if !ok || name == "" {
		return "", nil, op.Errorf(op.KindInvalid, "--arg %q is not NAME=VALUE", kv).WithHint("for example --arg message=hello --arg count=3")
	}
	v, err := coerce(s.Properties[name], value)
	if err != nil {
		return "", nil, op.Errorf(op.KindInvalid, "--arg %s: %v", name, err)
	}
	return name, v, nil
}

// coerce converts text typed by a person to an argument's JSON type.
func coerce(p *jsonschema.Schema, text string) (any, error) {
	var types []string
	if p != nil {
		types = op.SchemaTypes(p)
	}
	if len(types) == 0 {
		var v any
		if json.Unmarshal([]byte(text), &v) == nil {
			return v, nil
		}
		return text, nil
	}
	var firstErr error
	for _, t := range types {
		v, err := coerceTo(t, text)
		if err == nil {
			return v, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

func coerceTo(t, text string) (any, error) {
	switch t {
	case "string":
		return text, nil
	case "integer":
		n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", text)
		}
		return n, nil
	case "number":
		f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", text)
		}
		return f, nil
	case "boolean":
		b, err := strconv.ParseBool(strings.TrimSpace(text))
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", text)
		}
		return b, nil
	case "null":
		if strings.TrimSpace(text) == "null" {
			return nil, nil
		}
		return nil, fmt.Errorf("%q is not null", text)
	default: // object, array
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil || op.JSONType(v) != t {
			return nil, fmt.Errorf("%q is not a JSON %s", text, t)
		}
		return v, nil
	}
}

// askMissing asks on a terminal, one by one, for the required arguments the
// call lacks, converting each answer to the argument's type. An empty
// answer stops with an error: the call is not sent half-filled.
func askMissing(tool mcp.Tool, args map[string]any, in io.Reader, out io.Writer) error {
	s, err := schemaOf(tool)
	if err != nil {
		return op.Errorf(op.KindInvalid, "%w", err)
	}
	r := bufio.NewReader(in)
	for _, name := range s.Required {
		if _, ok := args[name]; ok {
			continue
		}
		for {
			fmt.Fprintf(out, "%s (%s): ", name, describe(s.Properties[name]))
			line, err := r.ReadString('\n')
			line = strings.TrimRight(line, "\r\n")
			if line == "" {
				return op.Errorf(op.KindInvalid, "tool %s: no value given for required argument %q", tool.Name, name)
			}
			v, cerr := coerce(s.Properties[name], line)
			if cerr == nil {
				args[name] = v
				break
			}
			fmt.Fprintf(out, "  %v; try again\n", cerr)
			if err != nil {
				return op.Errorf(op.KindInvalid, "tool %s: argument %q: %v", tool.Name, name, cerr)
			}
		}
	}
	return nil
}
