package op

import "lmtool.dev/lm/pkg/table"

// ForPeople reports whether the operation's output declares how a person
// at a terminal reads it (a table or plain text), so the CLI offers --json
// and -o there.
func (t *typed[In, Out]) ForPeople() bool { return table.ForPeople(new(Out)) }
