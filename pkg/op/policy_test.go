package op

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

type launchIn struct {
	Server  string   `json:"server,omitempty"`
	Command []string `json:"command,omitempty"`
	Yes     bool     `json:"yes,omitempty"`
	Times   float64  `json:"times,omitempty"`
}

type launchOut struct {
	Ran bool `json:"ran"`
}

// policyOps are an operation open to agents with person-only fields and one
// open to the person only; ran records which handlers ran.
func policyOps(ran map[string]bool) []Operation {
	run := func(name string) Handler[launchIn, launchOut] {
		return func(context.Context, *Env, launchIn) (launchOut, error) {
			ran[name] = true
			return launchOut{Ran: true}, nil
		}
	}
	return []Operation{
		New(Meta{Name: "demo_call", Path: []string{"demo", "call"}, Summary: "Call",
			Callers: Agents, PersonFields: []string{"command", "yes", "times"}}, run("demo_call")),
		New(Meta{Name: "demo_admin", Path: []string{"demo", "admin"}, Summary: "Administer",
			Callers: PersonOnly}, run("demo_admin")),
		New(Meta{Name: "other_admin", Path: []string{"other", "admin"}, Summary: "Administer another",
			Callers: PersonOnly}, run("other_admin")),
	}
}

func TestPolicy(t *testing.T) {
	agent := Caller{Role: RoleAgent, Name: "claude"}
	for _, tc := range []struct {
		name   string
		caller Caller
		allow  []string
		tool   string
		input  string
		denied string // "" when the call must run
	}{
		{"person runs administration", Person(), nil, "demo_admin", `{}`, ""},
		{"person sets person-only fields", Person(), nil, "demo_call", `{"command":["x"],"yes":true}`, ""},
		{"agent calls its profile", agent, nil, "demo_call", `{"server":"s"}`, ""},
		{"agent leaves person-only fields at zero", agent, nil, "demo_call", `{"server":"s","command":[],"yes":false}`, ""},
		{"agent sets a number field to zero", agent, nil, "demo_call", `{"server":"s","times":0.0}`, ""},
		{"agent sets a person-only number", agent, nil, "demo_call", `{"times":2}`, `may not set "times"`},
		{"agent refused administration", agent, nil, "demo_admin", `{}`, `agent "claude" may not call demo_admin: it is open to the person only`},
		{"agent refused a command", agent, nil, "demo_call", `{"command":["/bin/sh"]}`, `agent "claude" may not set "command" of demo_call`},
		{"agent refused an approval", Caller{Role: RoleAgent}, nil, "demo_call", `{"yes":true}`, `an agent may not set "yes" of demo_call`},
		{"grant of a tool", agent, []string{"demo_admin"}, "demo_admin", `{}`, ""},
		{"grant of a group", agent, []string{"demo"}, "demo_admin", `{}`, ""},
		{"grant of a group leaves other groups", agent, []string{"demo"}, "other_admin", `{}`, "may not call other_admin"},
		{"grant of a tool leaves its fields", agent, []string{"demo_call", "demo"}, "demo_call", `{"command":["x"]}`, `may not set "command"`},
		{"grant of a field", agent, []string{"demo_call.command"}, "demo_call", `{"command":["x"]}`, ""},
		{"grant of one field leaves another", agent, []string{"demo_call.command"}, "demo_call", `{"yes":true}`, `may not set "yes"`},
		{"grant of all", agent, []string{"all"}, "demo_call", `{"command":["x"],"yes":true}`, ""},
		{"anonymous gets no grant", Caller{}, []string{"all"}, "demo_call", `{}`, "an anonymous caller may not call demo_call: it is open to agents and the person"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ran := map[string]bool{}
			ops := policyOps(ran)
			grant, err := ParseGrant(tc.allow, ops)
			if err != nil {
				t.Fatal(err)
			}
			var o Operation
			for _, c := range ops {
				if c.Info().Name == tc.tool {
					o = c
				}
			}
			// The face records the caller on the context, as the gateway
			// does per request; the base Env's caller is the person, which
			// the context's must override.
			ctx := WithCaller(context.Background(), tc.caller)
			_, err = o.Call(ctx, &Env{Caller: Person(), Grant: grant}, json.RawMessage(tc.input))
			if tc.denied == "" {
				if err != nil || !ran[tc.tool] {
					t.Fatalf("want the call to run, got %v (ran %v)", err, ran[tc.tool])
				}
				return
			}
			if KindOf(err) != KindDenied || !strings.Contains(err.Error(), tc.denied) {
				t.Fatalf("want denied %q, got %v (kind %d)", tc.denied, err, KindOf(err))
			}
			if EnvelopeOf(err).ErrorCategory != "denied" || EnvelopeOf(err).Suggestion == "" {
				t.Errorf("envelope %+v: want category denied and a hint saying what would be allowed", EnvelopeOf(err))
			}
			if ran[tc.tool] {
				t.Fatal("the handler ran for a refused call")
			}
		})
	}
}

func TestDeniedSaysWhatWouldBeAllowed(t *testing.T) {
	ops := policyOps(map[string]bool{})
	_, err := ops[0].Call(context.Background(), &Env{Caller: Caller{Role: RoleAgent}}, json.RawMessage(`{"command":["x"]}`))
	hint := EnvelopeOf(err).Suggestion
	for _, want := range []string{"the other fields are open: server", "lm mcp --allow demo_call.command"} {
		if !strings.Contains(hint, want) {
			t.Errorf("hint %q lacks %q", hint, want)
		}
	}
	_, err = ops[1].Call(context.Background(), &Env{Caller: Caller{Role: RoleAgent}}, nil)
	if hint := EnvelopeOf(err).Suggestion; !strings.Contains(hint, "lm mcp --allow demo_admin (or its group, demo)") {
		t.Errorf("hint %q does not say how the person allows it", hint)
	}
}

func TestParseGrantRejectsUnknownNames(t *testing.T) {
	ops := policyOps(map[string]bool{})
	for _, bad := range []string{"demo_cal", "demo_call.server", "demo_admin.command", "*"} {
		_, err := ParseGrant([]string{bad}, ops)
		if KindOf(err) != KindInvalid || !strings.Contains(EnvelopeOf(err).Suggestion, "a group (demo, other)") {
			t.Errorf("--allow %s: want invalid input listing the groups, got %v", bad, err)
		}
	}
	g, err := ParseGrant([]string{"demo", " demo_call.command ", ""}, ops)
	if err != nil || !Permitted(ops[1].Info(), Caller{Role: RoleAgent}, g) || !g.Field("demo_call", "command") || g.Field("demo_call", "yes") {
		t.Fatalf("--allow demo, demo_call.command: %+v, %v", g, err)
	}
}

func TestUndeclaredAdmitsThePersonOnly(t *testing.T) {
	o := New(Meta{Name: "bare", Path: []string{"demo", "bare"}, Summary: "Bare"},
		func(context.Context, *Env, launchIn) (launchOut, error) { return launchOut{}, nil })
	if _, err := o.Call(context.Background(), &Env{Caller: Person()}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Call(context.Background(), &Env{Caller: Caller{Role: RoleAgent}}, nil); KindOf(err) != KindDenied {
		t.Fatalf("an undeclared operation must refuse agents, got %v", err)
	}
}

func TestEnvGetenv(t *testing.T) {
	e := &Env{Environ: []string{"A=1", "B=", "A=2", "broken"}}
	if v := e.Getenv("A"); v != "2" {
		t.Errorf("A = %q, want the last setting 2", v)
	}
	if v, ok := e.LookupEnv("B"); !ok || v != "" {
		t.Errorf("B = %q, %v; want set and empty", v, ok)
	}
	if _, ok := e.LookupEnv("broken"); ok {
		t.Error("an entry without = is no variable")
	}
	if (&Env{}).Getenv("HOME") != "" {
		t.Error("a nil environment must be empty, not the process's")
	}
}
