package op

import "context"

// Role is how far a call's maker is trusted. The zero value is the least
// trusted, so a face that forgets to say who is calling grants nothing.
type Role int

const (
	// RoleAnonymous is a caller that proved nothing: an HTTP client of the
	// gateway without a token.
	RoleAnonymous Role = iota
	// RoleAgent is a coding agent: `lm mcp`, or the gateway with an agent
	// token. Agents are language models that may be steered by what they
	// read, so they get the agent profile only.
	RoleAgent
	// RolePerson is the person: lm's command line, or the gateway's page
	// with the person's token.
	RolePerson
)

// String names the role as errors and the generated docs say it.
func (r Role) String() string {
	switch r {
	case RoleAgent:
		return "agent"
	case RolePerson:
		return "person"
	default:
		return "anonymous"
	}
}

// Caller is who made a call, as the face that received it established.
type Caller struct {
	Role Role
	// Name is the agent's or token's name, for attribution; "" when the
	// face knows none.
	Name string
	// Terminal is true only for lm's own command line, where a person may
	// be asked a question; the page's person is not on the gateway's
	// terminal.
	Terminal bool
}

// Person is the caller of lm's command line.
func Person() Caller { return Caller{Role: RolePerson, Terminal: true} }

// IsPerson reports whether the person made the call, on any face.
func (c Caller) IsPerson() bool { return c.Role == RolePerson }

type callerKey struct{}

// WithCaller records on ctx who made a request, for faces that learn it
// per request (the gateway, from the request's token) and hand the
// request to code built once with a base Env (its MCP endpoints).
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller recorded on ctx by [WithCaller].
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// AgentID is the agent a get_user_request call is credited to: the
// agent_id it gave, else the name its token proves, else its MCP client's
// name, else "cli".
func AgentID(requested, tokenName, client string) string {
	for _, id := range []string{requested, tokenName, client} {
		if id != "" {
			return id
		}
	}
	return "cli"
}
