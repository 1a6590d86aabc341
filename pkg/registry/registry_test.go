package registry

import (
	"testing"

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
