package op

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

type greetIn struct {
	Name  string   `json:"name" jsonschema:"who to greet"`
	Times int      `json:"times,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	Mood  string   `json:"mood,omitempty"`
}

func (*greetIn) RefineSchema(s *jsonschema.Schema) {
	s.Properties["mood"].Enum = []any{"calm", "loud"}
	hundred := 100.0
	s.Properties["times"].Maximum = &hundred
}

func (in *greetIn) Validate() error {
	if in.Times < 0 {
		return errors.New("times cannot be negative")
	}
	return nil
}

type greetOut struct {
	Text string `json:"text"`
}

func greet() Operation {
	return New(Meta{Name: "greet", Path: []string{"demo", "greet"}, Summary: "Greet", Callers: Anyone},
		func(_ context.Context, _ *Env, in greetIn) (greetOut, error) {
			return greetOut{Text: strings.Repeat("hi "+in.Name+" ", max(in.Times, 1))}, nil
		})
}

func TestCallValidatesWithClearMessages(t *testing.T) {
	o := greet()
	for _, tc := range []struct {
		input, want string
	}{
		{`{"name":"ada","colour":1}`, `unknown field "colour"`},
		{`{}`, `missing required field "name"`},
		{`{"name":5}`, `field "name" must be a string, got integer`},
		{`{"name":"ada","times":"x"}`, `field "times" must be an integer, got string`},
		{`{"name":"ada","tags":"x"}`, `field "tags" must be an array, got string`},
		{`{"name":"ada","mood":"sad"}`, `field "mood" must be one of calm, loud, got sad`},
		{`{"name":"ada","times":-1}`, `times cannot be negative`},
		{`{"name":"ada","times":101}`, `field "times" must be at most 100, got 101`},
		{`[1]`, `input must be a JSON object, got array`},
		{`{"name":`, `input is not valid JSON`},
	} {
		t.Run(tc.input, func(t *testing.T) {
			_, err := o.Call(context.Background(), &Env{}, json.RawMessage(tc.input))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: error %v, want %q", tc.input, err, tc.want)
			}
			if KindOf(err) != KindInvalid {
				t.Errorf("%s: kind %v, want invalid", tc.input, KindOf(err))
			}
		})
	}
	out, err := o.Call(context.Background(), &Env{}, json.RawMessage(`{"name":"ada","times":2,"tags":["a"]}`))
	if err != nil || out.(greetOut).Text != "hi ada hi ada " {
		t.Fatalf("valid call: %v %v", out, err)
	}
	if _, err := o.Call(context.Background(), &Env{}, nil); !strings.Contains(err.Error(), "missing required field") {
		t.Errorf("empty input is {}: %v", err)
	}
}

func TestUnknownFieldHintListsAccepted(t *testing.T) {
	_, err := greet().Call(context.Background(), &Env{}, json.RawMessage(`{"nme":"x"}`))
	env := EnvelopeOf(err)
	if env.Suggestion != "accepted fields: mood, name, tags, times" || env.ExitCode != 2 || env.ErrorCategory != "invalid_input" {
		t.Fatalf("envelope %+v", env)
	}
}

// A command-line field is the command line's: other faces neither take it
// nor name it among the accepted fields.
func TestCLIFieldsAreTheCommandLines(t *testing.T) {
	o := New(Meta{Name: "greet", Path: []string{"demo", "greet"}, Summary: "Greet", Callers: Anyone, CLIFields: []string{"tags"}},
		func(_ context.Context, _ *Env, in greetIn) (greetOut, error) {
			return greetOut{Text: strings.Join(in.Tags, ",")}, nil
		})
	input := json.RawMessage(`{"name":"x","tags":["a"]}`)
	if out, err := o.Call(context.Background(), &Env{Caller: Person()}, input); err != nil || out.(greetOut).Text != "a" {
		t.Fatalf("on the command line: %v %v", out, err)
	}
	for _, c := range []Caller{{Role: RolePerson}, {Role: RoleAgent}} {
		_, err := o.Call(context.Background(), &Env{Caller: c}, input)
		if env := EnvelopeOf(err); env.Error != `unknown field "tags"` || env.Suggestion != "accepted fields: mood, name, times" {
			t.Errorf("as %v off the command line: %+v", c.Role, env)
		}
	}
}

func TestNewPanicsOnBadDefinitions(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a positional argument that is no field must panic")
		}
	}()
	New(Meta{Name: "x", Path: []string{"x"}, Summary: "x", Args: []string{"nope"}},
		func(context.Context, *Env, greetIn) (greetOut, error) { return greetOut{}, nil }).InputSchema()
}

func TestKindsAreTheExitCodeTable(t *testing.T) {
	want := map[Kind]int{KindInternal: 1, KindInvalid: 2, KindNotFound: 3, KindConflict: 4, KindDenied: 5, KindUnavailable: 6, KindTimeout: 7, KindChecksFailed: 8}
	for k, code := range want {
		if k.ExitCode() != code {
			t.Errorf("%v exits %d, want %d", k, k.ExitCode(), code)
		}
	}
	if KindOf(errors.New("boom")) != KindInternal || KindOf(nil) != KindOK {
		t.Error("plain errors are internal, nil is ok")
	}
	wrapped := Errorf(KindNotFound, "no such thing").WithCategory("file_not_found")
	env := EnvelopeOf(fmtWrap(wrapped))
	if env.ErrorCategory != "file_not_found" || env.ExitCode != 3 {
		t.Errorf("wrapped error envelope %+v", env)
	}
}

func fmtWrap(err error) error { return errors.Join(errors.New("context"), err) }

func FuzzCall(f *testing.F) {
	for _, seed := range []string{`{"name":"a"}`, `{}`, `[]`, `{"name":1,"tags":[1]}`, `{"mood":null}`} {
		f.Add(seed)
	}
	o := greet()
	f.Fuzz(func(t *testing.T, input string) {
		_, err := o.Call(context.Background(), &Env{}, json.RawMessage(input))
		if err != nil && KindOf(err) != KindInvalid {
			t.Fatalf("%q: a bad input must be invalid, got %v (%v)", input, KindOf(err), err)
		}
	})
}

// A route that binds a path wildcard to no input field, or that a face
// could not serve, is a definition error found when the schemas are first
// derived, not a route that silently answers 422 to every request.
func TestRouteDefinitionErrors(t *testing.T) {
	type in struct {
		ID     string   `json:"id"`
		Assign []string `json:"assign,omitempty"`
	}
	handler := func(context.Context, *Env, in) (struct{}, error) { return struct{}{}, nil }
	for name, route := range map[string]Route{
		"unknown wildcard":  {Method: "GET", Path: "/api/things/{name}"},
		"command-line only": {Method: "GET", Path: "/api/things/{assign}"},
		"relative path":     {Method: "GET", Path: "api/things"},
		"unknown method":    {Method: "FETCH", Path: "/api/things"},
	} {
		t.Run(name, func(t *testing.T) {
			o := New(Meta{Name: "thing_show", Path: []string{"thing", "show"}, Summary: "s", Callers: PersonOnly,
				CLIFields: []string{"assign"}, HTTP: []Route{route}}, handler)
			defer func() {
				if recover() == nil {
					t.Errorf("route %s was accepted", route.Pattern())
				}
			}()
			o.InputSchema()
		})
	}
	ok := New(Meta{Name: "thing_show", Path: []string{"thing", "show"}, Summary: "s", Callers: PersonOnly,
		HTTP: []Route{{Method: "GET", Path: "/api/things/{id}"}}}, handler)
	if got := ok.Info().HTTP[0].Wildcards(); !slices.Equal(got, []string{"id"}) {
		t.Errorf("wildcards = %q, want [id]", got)
	}
	if s := ok.InputSchema(); s.Properties["id"] == nil {
		t.Errorf("input schema lost id: %v", s)
	}
}

// A remote tool's error keeps the CLI's exit status 1 and its category, and
// an envelope from another lm process says remote again, not internal.
func TestRemoteErrorsKeepTheirKindAcrossProcesses(t *testing.T) {
	env := EnvelopeOf(Errorf(KindRemote, "tool echo failed: no"))
	if env.ExitCode != 1 || env.ErrorCategory != "tool_error" || env.Recoverable {
		t.Errorf("envelope = %+v, want exit 1, tool_error, not recoverable", env)
	}
	for _, c := range []struct {
		env  Envelope
		want Kind
	}{
		{env, KindRemote},
		{EnvelopeOf(Errorf(KindInternal, "boom")), KindInternal},
		{EnvelopeOf(Errorf(KindTimeout, "late")), KindTimeout},
		{Envelope{ExitCode: 42, ErrorCategory: "odd"}, KindInternal},
	} {
		if got := c.env.Kind(); got != c.want {
			t.Errorf("%+v.Kind() = %v, want %v", c.env, got, c.want)
		}
	}
}

func TestHTTPStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"invalid input takes the route's status", Errorf(KindInvalid, "bad"), 422},
		{"failed checks take the route's status", Errorf(KindChecksFailed, "failed"), 422},
		{"not found", Errorf(KindNotFound, "gone"), 404},
		{"conflict", Errorf(KindConflict, "consumed"), 409},
		{"denied", Errorf(KindDenied, "no"), 403},
		{"unavailable", Errorf(KindUnavailable, "down"), 503},
		{"timeout", Errorf(KindTimeout, "late"), 504},
		{"an error of no kind is internal", errors.New("boom"), 500},
		{"a remote tool's error is a bad gateway", Errorf(KindRemote, "tool failed"), 502},
		{"another server's failed tool is a bad gateway", &Error{Kind: KindInternal, Category: CategoryToolError, Err: errors.New("tool failed")}, 502},
		{"a damaged store is the server's failure", &Error{Kind: KindChecksFailed, Category: "store_corrupt", Err: errors.New("corrupt")}, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HTTPStatus(tc.err, 422); got != tc.want {
				t.Errorf("HTTPStatus(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestExitStatuses(t *testing.T) {
	rows := ExitStatuses()
	for i, k := range []Kind{KindOK, KindInternal, KindInvalid, KindNotFound, KindConflict, KindDenied, KindUnavailable, KindTimeout, KindChecksFailed} {
		if rows[i].Code != k.ExitCode() || rows[i].Meaning == "" {
			t.Errorf("row %d = %+v, want exit code %d with a meaning", i, rows[i], k.ExitCode())
		}
	}
	if last := rows[len(rows)-1]; last.Code != ExitInterrupted {
		t.Errorf("last row %+v, want %d interrupted", last, ExitInterrupted)
	}
}
