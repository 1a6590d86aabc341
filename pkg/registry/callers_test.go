package registry

import (
	"testing"

	"lmtool.dev/lm/pkg/op"
)

// TestEveryOperationDeclaresItsCallers: an operation without a declaration
// would be refused to agents silently, or — worse — be added to the agent
// profile by a later default; each one says who may call it.
func TestEveryOperationDeclaresItsCallers(t *testing.T) {
	for _, o := range All() {
		if m := o.Info(); m.Callers == op.Undeclared {
			t.Errorf("%s: op.Meta.Callers is not declared (op.PersonOnly, op.Agents or op.Anyone)", m.Name)
		}
	}
}
