package op

import (
	"context"

	"lmtool.dev/lm/pkg/table"
)

// ForPeople reports whether the operation's output declares how a person
// at a terminal reads it (a table or plain text), so the CLI offers --json
// and -o there.
func (t *typed[In, Out]) ForPeople() bool { return table.ForPeople(new(Out)) }

// Suggester is implemented by inputs that can list the values a field may
// take right now (instruction ids, job ids, configured server names), for
// shell completion. It reads what exists and never changes anything.
type Suggester interface {
	Suggest(ctx context.Context, env *Env, field string) []string
}

// Suggest lists values for field when the input knows them.
func (t *typed[In, Out]) Suggest(ctx context.Context, env *Env, field string) []string {
	if s, ok := any(new(In)).(Suggester); ok {
		return s.Suggest(ctx, env, field)
	}
	return nil
}
