package op

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Access is who may call an operation, declared in [Meta.Callers]. Trust is
// ordered (anonymous < agent < person): an operation open to a role is open
// to every more trusted one.
type Access int

// The declarations. The zero value is no declaration at all, which the
// registry's tests reject and which admits the person only.
const (
	Undeclared Access = iota
	// PersonOnly: lm's command line or the page with the person's token.
	// An agent gets it only when the person grants it at launch.
	PersonOnly
	// Agents: agents too (lm mcp, agent tokens) — the agent profile.
	Agents
	// Anyone: also callers that proved nothing (no token).
	Anyone
)

// String names the declaration as the generated docs say it.
func (a Access) String() string {
	switch a {
	case PersonOnly:
		return "person"
	case Agents:
		return "agent"
	case Anyone:
		return "anyone"
	default:
		return "undeclared"
	}
}

// admits reports whether a role may call an operation so declared, before
// any grant.
func (a Access) admits(r Role) bool {
	switch r {
	case RolePerson:
		return true
	case RoleAgent:
		return a >= Agents
	default:
		return a >= Anyone
	}
}

// Grant is what the person who started a face lets its agents do beyond the
// agent profile, said on the command line they control (lm mcp --allow,
// lm gateway --allow). It names groups ("queue"), operations by tool name
// ("queue_config"), single person-only fields ("servers_call.command"), or
// "all" (everything the person may do). A grant widens agents only: an
// anonymous caller gets nothing from it. The zero Grant grants nothing.
type Grant struct {
	all   bool
	names map[string]bool
}

// GrantAll is the --allow word that trusts agents as the person.
const GrantAll = "all"

// ParseGrant checks names (each may hold several, comma-separated) against
// ops and returns the grant they make. An
// unknown name is invalid input listing what is accepted, so a typo never
// silently grants less (or more) than the person meant.
func ParseGrant(names []string, ops []Operation) (Grant, error) {
	g := Grant{names: map[string]bool{}}
	valid := map[string]bool{}
	var groups []string
	for _, o := range ops {
		m := o.Info()
		valid[m.Name] = true
		// A group is a grant when it holds an operation agents could be
		// served; one of command-line operations only grants nothing.
		if !m.CLIOnly && !m.Stream && !valid[m.Group()] {
			valid[m.Group()] = true
			groups = append(groups, m.Group())
		}
		for _, f := range m.PersonFields {
			valid[m.Name+"."+f] = true
		}
	}
	var words []string
	for _, n := range names {
		words = append(words, strings.Split(n, ",")...)
	}
	for _, n := range words {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
		case n == GrantAll:
			g.all = true
		case valid[n]:
			g.names[n] = true
		default:
			sort.Strings(groups)
			return Grant{}, Errorf(KindInvalid, "--allow %q names no group, tool or person-only field", n).
				WithHint("accepted: %s, a group (%s), a tool name (lm mcp's tools), or TOOL.FIELD for a person-only field (see docs/callers.md)",
					GrantAll, strings.Join(groups, ", "))
		}
	}
	return g, nil
}

func (g Grant) operation(m Meta) bool {
	return g.all || g.names[m.Name] || g.names[m.Group()]
}

// Field reports whether agents may set a tool's person-only field. Only
// naming the field (or all) grants it: granting an operation or its group
// lets agents call it, not steer it to a program of their choosing.
func (g Grant) Field(tool, field string) bool {
	return g.all || g.names[tool+"."+field]
}

// Permitted reports whether c may call the operation at all, given the
// face's grant; fields are checked per call by [Operation.Call]. Faces use
// it to list only the tools a caller may call.
func Permitted(m Meta, c Caller, g Grant) bool {
	return m.Callers.admits(c.Role) || (c.Role == RoleAgent && g.operation(m))
}

// Admit is nil when c may call the operation, else the refusal every face
// gives for it: for routes that serve an operation's data without calling
// it (a stream of what it would return).
func Admit(m Meta, c Caller, g Grant) error {
	if Permitted(m, c, g) {
		return nil
	}
	return deniedCall(m, c)
}

// permitFields checks the person-only fields the input obj sets; a field
// set to false, 0, "", [], {} or null is not set, so a client that sends
// every field with its default is not refused. The schema lists, in a
// refusal, the fields that are open.
func permitFields(m Meta, c Caller, g Grant, obj map[string]any, schema *jsonschema.Schema) error {
	if c.Role == RolePerson {
		return nil
	}
	for _, f := range m.PersonFields {
		if v, ok := obj[f]; ok && !zeroJSON(v) && !(c.Role == RoleAgent && g.Field(m.Name, f)) {
			return deniedField(m, c, f, FieldNames(schema))
		}
	}
	return nil
}

func deniedCall(m Meta, c Caller) *Error {
	err := Errorf(KindDenied, "%s may not call %s: it is open to %s", c, m.Name, m.Callers.who())
	if c.Role == RoleAnonymous {
		return err.WithHint("call with the person's or an agent's token (Authorization: Bearer TOKEN)")
	}
	return err.WithHint("%s", widen(m.Name+" (or its group, "+m.Group()+")"))
}

func deniedField(m Meta, c Caller, field string, fields []string) *Error {
	var open []string
	for _, f := range fields {
		if !slices.Contains(m.PersonFields, f) {
			open = append(open, f)
		}
	}
	hint := "leave it out"
	if len(open) > 0 {
		hint += "; the other fields are open: " + strings.Join(open, ", ")
	}
	err := Errorf(KindDenied, "%s may not set %q of %s: only the person may", c, field, m.Name)
	if c.Role == RoleAnonymous {
		return err.WithHint("%s", hint)
	}
	return err.WithHint("%s; %s", hint, widen(m.Name+"."+field))
}

// widen tells how the person lets agents do more: on the command line that
// starts the face, never from the agent's side.
func widen(what string) string {
	return "the person can allow it to agents when starting lm: lm mcp --allow " + what + ", or lm gateway --allow for /mcp"
}

func (a Access) who() string {
	switch a {
	case Agents:
		return "agents and the person"
	case Anyone:
		return "anyone"
	default:
		return "the person only"
	}
}

func zeroJSON(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	case json.Number:
		f, err := v.Float64()
		return err == nil && f == 0
	default:
		return false
	}
}

// String describes the caller in messages: who was refused.
func (c Caller) String() string {
	switch {
	case c.Role == RolePerson:
		return "the person"
	case c.Role == RoleAgent && c.Name != "":
		return fmt.Sprintf("agent %q", c.Name)
	case c.Role == RoleAgent:
		return "an agent"
	default:
		return "an anonymous caller"
	}
}
