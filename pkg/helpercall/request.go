package helpercall

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/op"
)

// Request is what spec 001's callers send with every helper call besides the
// tool's own fields: context, accepted and ignored (the tool's fields carry
// all it reads), and schema, the caller's JSON Schema for data, which is
// honoured: an answer whose data does not match it is not returned (nor a
// file written) but an error invalid_output saying where it differs.
// Helper inputs embed it.
type Request struct {
	Context any            `json:"context,omitempty" jsonschema:"spec 001's context: accepted and ignored, the tool's own fields carry what it reads"`
	Schema  map[string]any `json:"schema,omitempty" jsonschema:"a JSON Schema the answer's data must match; when it does not, the call fails with error_category invalid_output"`
}

// CheckSchema rejects a schema that is not a usable JSON Schema, before
// any work is done.
func (r Request) CheckSchema() error {
	_, err := r.resolved()
	return err
}

// Conform checks data against the caller's schema, if one was given.
func (r Request) Conform(data any) error {
	schema, err := r.resolved()
	if schema == nil || err != nil {
		return err
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return op.Errorf(op.KindInternal, "encode the answer: %w", err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return op.Errorf(op.KindInternal, "decode the answer: %w", err)
	}
	if err := schema.Validate(v); err != nil {
		return op.Errorf(op.KindInvalid, "the answer's data does not match the schema given: %v", err).
			WithCategory("invalid_output").
			WithHint("the tool's output schema describes data exactly; fix schema, or leave it out to get the answer as it is")
	}
	return nil
}

func (r Request) resolved() (*jsonschema.Resolved, error) {
	if r.Schema == nil {
		return nil, nil
	}
	raw, err := json.Marshal(r.Schema)
	if err == nil {
		var s jsonschema.Schema
		if err = json.Unmarshal(raw, &s); err == nil {
			var resolved *jsonschema.Resolved
			if resolved, err = s.Resolve(nil); err == nil {
				return resolved, nil
			}
		}
	}
	return nil, op.Errorf(op.KindInvalid, "schema is not a usable JSON Schema: %v", err).
		WithHint(`give a JSON Schema for data, such as {"type": "object", "required": ["results"]}`)
}
