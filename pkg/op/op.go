// Package op defines lm's operations once, independently of how they are
// invoked. The CLI (package cli) and the MCP server (package mcpx) are both
// generated from the same [Operation] values, so an operation's name, input,
// output, validation and errors are identical on every transport.
package op

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/jsonio"
	"lmtool.dev/lm/pkg/store"
)

// Effect says what an operation does to the world. It drives the MCP
// annotations (readOnlyHint, destructiveHint).
type Effect int

// The effects.
const (
	ReadOnly    Effect = iota // reads only
	Mutating                  // adds or changes data, never removes it
	Destructive               // may remove or overwrite data
)

// Meta describes an operation for every transport.
type Meta struct {
	// Name is the MCP tool name: snake_case, [a-z0-9_].
	Name string
	// Path is the CLI path below `lm`, e.g. {"queue", "add"}. Its first
	// element is the operation's group (for `lm mcp --only`).
	Path []string
	// Summary is one line: CLI usage, the first line of the MCP description.
	Summary string
	// Description is longer prose shown in help, man pages and MCP.
	Description string
	// Examples are shown by the CLI and man pages only.
	Examples string
	// Args binds positional CLI arguments to input fields, in order. The
	// last may name a []string field, which takes the remaining arguments;
	// a string field given several words joins them with spaces.
	Args []string
	// Trailing names a []string field that takes the CLI words after "--"
	// (`lm servers call TOOL -- npx -y server`), so they can follow
	// positional arguments without being mistaken for them.
	Trailing string
	// Aliases gives input fields extra CLI flag names ("agent_id" →
	// {"agent"} adds --agent beside --agent-id); a one-letter alias is a
	// short flag ("follow" → {"f"} adds -f).
	Aliases map[string][]string
	// StdinText names a string field read as text from stdin when the CLI
	// invocation leaves it unset (or sets it to "-") and stdin is not a
	// terminal. A field its input's schema marks writeOnly (a secret) has no
	// CLI flag, so stdin and --input are its only sources.
	StdinText string
	// Lines, when set, adds a --jsonl flag to the CLI that reads stdin as
	// JSON Lines into the named array field, decoding each line with
	// DecodeLine.
	Lines      string
	DecodeLine func(line []byte) (any, error)
	// Effect and Idempotent become the MCP annotations.
	Effect     Effect
	Idempotent bool
	// Stream marks an operation that reports through Env.Emit (JSON Lines
	// on the CLI) rather than returning one result. Streams are CLI only.
	Stream bool
	// CLIOnly keeps the operation off MCP; it is on HTTP only by the
	// routes it declares (HTTP).
	CLIOnly bool
	// Hidden keeps a CLI command out of help and completion (internal
	// entry points such as a supervisor process).
	Hidden bool
	// Callers says who may call the operation; every operation declares
	// it (see policy.go and docs/callers.md). [Operation.Call] enforces it
	// on every face.
	Callers Access
	// PersonFields are top-level input fields only the person may set to
	// anything but their zero value, whoever may call the operation: a
	// program or URL of the caller's choosing ("command", "url"), a way out
	// of a confinement ("allow_outside_root"), an approval ("yes"). An
	// agent setting one is refused unless the face's grant names
	// "TOOL.FIELD".
	PersonFields []string
	// CLIFields are input fields only lm's command line sets (words such
	// as KEY=VALUE that its typed fields already cover): MCP and HTTP
	// neither list nor take them.
	CLIFields []string
	// HTTP are the operation's routes on the gateway's API (see [Route]);
	// none keeps it off HTTP but for /mcp. A stream has none.
	HTTP []Route
}

// Group is the operation's group, the first element of its path.
func (m Meta) Group() string { return m.Path[0] }

// Env carries what a handler may use besides its input. The transport
// builds one per call; nothing in it is opened until used. It is a
// handler's only door to the process: the streams, the terminal, the
// environment and the caller come through it, never from package os,
// because the process serving an agent (lm mcp, the gateway) has streams
// that are the transport's and an environment that is the person's.
type Env struct {
	Store *store.Store
	// Queue, when set, is the URL of the database that holds the queue
	// (postgres://…) in place of Store, which keeps what is local.
	// QueueErr is why the configured one cannot be used: it fails the
	// queue's operations only, so lm can still be used to mend it.
	Queue    string
	QueueErr error
	Home     string // LM_HOME: config, templates, logs
	// Stdin and Stdout are the caller's own streams: the command line's.
	// Faces whose streams carry a protocol leave them nil.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer // diagnostics; handlers never write to stdout
	// Verbose asks for routine status lines on Stderr as well (a server
	// connecting): a person reads them at a terminal or asked with -v.
	Verbose bool
	// Environ is the environment the face was started with, as
	// "KEY=value" (read it with Getenv; start programs with ChildEnv).
	// Nil is an empty environment.
	Environ []string
	Now     func() time.Time
	// Started is when the serving process started.
	Started time.Time
	// Client is the name the MCP client gave in initialize ("" on the CLI).
	Client string
	// Caller is who made the call. [Operation.Call] replaces it with the
	// caller a face recorded on the call's context ([WithCaller]) and
	// refuses what the caller may not do before the handler runs. Asking a
	// question requires Caller.Terminal. Its zero value is the least
	// trusted caller.
	Caller Caller
	// Roots are the directories a caller other than the person is confined
	// to (an agent's: its MCP client's roots, else where lm started, else the
	// person's --root). Paths such a caller names resolve beneath them; with
	// none, it reaches no files. The person is not confined by them.
	Roots []string
	// Grant is what the person who started the face allows its agents
	// beyond the agent profile (lm mcp --allow).
	Grant Grant
	// Progress reports progress of long work when the caller asked for it
	// (MCP progress tokens); it may be nil.
	Progress func(progress, total float64, message string)
	// Emit writes one value of a stream operation's output.
	Emit func(v any) error
	// AfterReply, when set, runs fn once the face has handed the reply
	// carrying marker (an id it contains) to the caller (the CLI printed
	// it, lm mcp wrote it); nil on faces that cannot tell.
	AfterReply func(marker string, fn func())
	// Log sends an MCP logging notification (notifications/message) to
	// the client that made the call, for output the client asked to have
	// streamed; it may be nil (the CLI). It stays usable after the call
	// returns, for as long as the client's session lasts.
	Log func(level string, data any)
}

// Getenv returns the value of key in e.Environ, "" when unset.
func (e *Env) Getenv(key string) string {
	v, _ := e.LookupEnv(key)
	return v
}

// LookupEnv returns the value of key in e.Environ and whether it is set.
func (e *Env) LookupEnv(key string) (string, bool) { return LookupEnv(e.Environ, key) }

// LookupEnv returns the value of key in environ ("KEY=value" entries) and
// whether it is set; the last setting wins, as with os/exec.
func LookupEnv(environ []string, key string) (string, bool) {
	for i := len(environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(environ[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// ChildEnv is the environment of a program started for a call: environ
// (the caller's, op.Env.Environ) followed by extra. It is never nil,
// because os/exec gives a program with a nil environment the serving
// process's own.
func ChildEnv(environ []string, extra ...string) []string {
	return append(append(make([]string, 0, len(environ)+len(extra)), environ...), extra...)
}

// CanAsk reports whether a person can be asked a question now: the
// caller is at lm's own terminal and stdin is that terminal.
func (e *Env) CanAsk() bool {
	return e.Caller.Terminal && jsonio.IsTerminal(e.Stdin)
}

// ReportProgress calls Env.Progress when the caller listens for progress.
func (e *Env) ReportProgress(progress, total float64, message string) {
	if e.Progress != nil {
		e.Progress(progress, total, message)
	}
}

// Exiter is implemented by outputs that choose a non-zero CLI exit status
// while still being a result, like `lm queue next` ending its wait empty.
type Exiter interface{ ExitCode() int }

// Validator is implemented by inputs with rules beyond their JSON Schema.
type Validator interface{ Validate() error }

// SchemaRefiner is implemented by inputs whose generated JSON Schema needs
// more than struct tags can say (enums, bounds, defaults).
type SchemaRefiner interface{ RefineSchema(*jsonschema.Schema) }

// Operation is the type-erased view of an operation the adapters use.
type Operation interface {
	Info() Meta
	// InputSchema and OutputSchema are JSON Schemas of type object.
	InputSchema() *jsonschema.Schema
	OutputSchema() *jsonschema.Schema
	// Call checks that the caller may call the operation, validates raw
	// (a JSON object; empty means {}), checks the person-only fields it
	// sets, decodes it and runs the handler. It is the one place the
	// callers' policy is enforced, so every face that runs an operation
	// gets it.
	Call(ctx context.Context, env *Env, raw json.RawMessage) (any, error)
	// ForPeople reports whether the output has a table or text for people.
	ForPeople() bool
	// Suggest lists the values an input field may take now, for shell
	// completion (see [Suggester]); nil when the input does not know.
	Suggest(ctx context.Context, env *Env, field string) []string
}

// Handler runs an operation.
type Handler[In, Out any] func(ctx context.Context, env *Env, in In) (Out, error)

type typed[In, Out any] struct {
	meta     Meta
	run      Handler[In, Out]
	once     sync.Once
	in, out  *jsonschema.Schema
	resolved *jsonschema.Resolved
}

// New defines an operation. Its schemas are derived on first use, so a
// process that runs one command pays only for that command's reflection.
// Definition errors panic (a programming error caught by any test that lists
// the registry's schemas).
func New[In, Out any](meta Meta, run Handler[In, Out]) Operation {
	if len(meta.Path) == 0 || meta.Name == "" || meta.Summary == "" {
		panic(fmt.Sprintf("op: %q needs a name, a path and a summary", meta.Name))
	}
	if reflect.TypeFor[Out]().Kind() != reflect.Struct || reflect.TypeFor[In]().Kind() != reflect.Struct {
		panic(fmt.Sprintf("op %s: input and output must be structs (MCP schemas are objects)", meta.Name))
	}
	if len(meta.HTTP) > 0 && meta.Stream {
		panic(fmt.Sprintf("op %s: a stream has no HTTP route", meta.Name))
	}
	return &typed[In, Out]{meta: meta, run: run}
}

func (t *typed[In, Out]) schemas() {
	t.once.Do(func() {
		in, err := jsonschema.For[In](schemaOptions)
		if err != nil {
			panic(fmt.Sprintf("op %s: input schema: %v", t.meta.Name, err))
		}
		out, err := jsonschema.For[Out](schemaOptions)
		if err != nil {
			panic(fmt.Sprintf("op %s: output schema: %v", t.meta.Name, err))
		}
		if in.Properties == nil {
			in.Properties = map[string]*jsonschema.Schema{}
		}
		if r, ok := any(new(In)).(SchemaRefiner); ok {
			r.RefineSchema(in)
		}
		for _, a := range t.meta.Args {
			if in.Properties[a] == nil {
				panic(fmt.Sprintf("op %s: positional argument %q is not an input field", t.meta.Name, a))
			}
		}
		for _, f := range t.meta.PersonFields {
			if in.Properties[f] == nil {
				panic(fmt.Sprintf("op %s: person-only field %q is not an input field", t.meta.Name, f))
			}
		}
		fields := map[string]bool{}
		for name := range in.Properties {
			fields[name] = !slices.Contains(t.meta.CLIFields, name)
		}
		for _, r := range t.meta.HTTP {
			if err := r.check(fields); err != nil {
				panic(fmt.Sprintf("op %s: %v", t.meta.Name, err))
			}
		}
		resolved, err := in.Resolve(nil)
		if err != nil {
			panic(fmt.Sprintf("op %s: resolve input schema: %v", t.meta.Name, err))
		}
		t.in, t.out, t.resolved = in, out, resolved
	})
}

// schemaOptions describe Go's "any value" types as object schemas. The
// library's default for them is the empty schema, which it writes as the
// boolean schema `true`: valid JSON Schema, but the MCP schema wants every
// property to be an object, and the official TypeScript SDK 1.x client
// rejects a whole tools/list over one such property.
var schemaOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[any](): {Description: "any JSON value"},
}}

func (t *typed[In, Out]) Info() Meta { return t.meta }

func (t *typed[In, Out]) InputSchema() *jsonschema.Schema {
	t.schemas()
	return t.in
}

func (t *typed[In, Out]) OutputSchema() *jsonschema.Schema {
	t.schemas()
	return t.out
}

func (t *typed[In, Out]) Call(ctx context.Context, env *Env, raw json.RawMessage) (any, error) {
	if c, ok := CallerFrom(ctx); ok {
		env.Caller = c
	}
	if !Permitted(t.meta, env.Caller, env.Grant) {
		return nil, deniedCall(t.meta, env.Caller)
	}
	in, err := t.decode(raw, env)
	if err != nil {
		return nil, err
	}
	return t.run(ctx, env, in)
}

// decode is the one validation path: shape checks with clear messages,
// then the person-only fields, then the full JSON Schema, then strict
// decoding, then Validate.
func (t *typed[In, Out]) decode(raw json.RawMessage, env *Env) (In, error) {
	t.schemas()
	var in In
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || string(raw) == "{}" {
		// The common call without arguments: only required fields can be
		// wrong, so the generic checks have nothing else to find.
		if len(t.in.Required) > 0 {
			return in, Errorf(KindInvalid, "missing required field %s", quoteList(t.in.Required))
		}
		return in, validate(&in)
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return in, Errorf(KindInvalid, "input is not valid JSON: %v", err)
	}
	obj, ok := generic.(map[string]any)
	if !ok {
		return in, Errorf(KindInvalid, "input must be a JSON object, got %s", JSONType(generic))
	}
	shape := t.in
	if !env.Caller.Terminal && len(t.meta.CLIFields) > 0 {
		shape = WithoutFields(t.in, t.meta.CLIFields)
	}
	if err := checkShape(shape, obj); err != nil {
		return in, err
	}
	if err := permitFields(t.meta, env.Caller, env.Grant, obj, t.in); err != nil {
		return in, err
	}
	if err := t.resolved.Validate(normalizeNumbers(generic)); err != nil {
		return in, Errorf(KindInvalid, "invalid input: %v", err)
	}
	if err := jsonio.DecodeStrict(raw, &in); err != nil {
		return in, Errorf(KindInvalid, "invalid input: %v", err)
	}
	return in, validate(&in)
}

// validate runs an input's own Validate, if it has one; its plain errors are
// invalid input.
func validate(in any) error {
	v, ok := in.(Validator)
	if !ok {
		return nil
	}
	err := v.Validate()
	if err != nil && KindOf(err) == KindInternal {
		err = &Error{Kind: KindInvalid, Err: err}
	}
	return err
}

// checkShape reports the common mistakes (unknown, missing or mistyped
// top-level fields) in words a person or a model can act on, listing what is
// accepted.
func checkShape(s *jsonschema.Schema, obj map[string]any) error {
	var unknown []string
	for k := range obj {
		if s.Properties[k] == nil {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return Errorf(KindInvalid, "unknown field %s", quoteList(unknown)).
			WithHint("accepted fields: %s", strings.Join(FieldNames(s), ", "))
	}
	var missing []string
	for _, r := range s.Required {
		if _, ok := obj[r]; !ok {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return Errorf(KindInvalid, "missing required field %s", quoteList(missing))
	}
	for _, name := range sortedKeys(obj) {
		want := s.Properties[name]
		got := JSONType(obj[name])
		if !typeAccepts(want, got) {
			return Errorf(KindInvalid, "field %q must be %s, got %s", name, describeType(want), got)
		}
		if n, isNum := obj[name].(json.Number); isNum {
			f, _ := n.Float64()
			if want.Minimum != nil && f < *want.Minimum {
				return Errorf(KindInvalid, "field %q must be at least %v, got %v", name, *want.Minimum, n)
			}
			if want.Maximum != nil && f > *want.Maximum {
				return Errorf(KindInvalid, "field %q must be at most %v, got %v", name, *want.Maximum, n)
			}
		}
		if len(want.Enum) > 0 && !slices.ContainsFunc(want.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(obj[name]) }) {
			return Errorf(KindInvalid, "field %q must be one of %s, got %v", name, enumList(want.Enum), obj[name])
		}
	}
	return nil
}

// FieldNames lists a schema's properties in a stable order.
func FieldNames(s *jsonschema.Schema) []string {
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// WithoutFields is an object schema less the named properties: those a
// face takes elsewhere (an HTTP path) or not at all (CLIFields).
func WithoutFields(schema *jsonschema.Schema, names []string) *jsonschema.Schema {
	c := *schema
	c.Properties = maps.Clone(schema.Properties)
	for _, n := range names {
		delete(c.Properties, n)
	}
	c.Required = slices.DeleteFunc(slices.Clone(schema.Required), func(r string) bool { return slices.Contains(names, r) })
	return &c
}

// SchemaTypes returns the JSON types a schema accepts ("string", "integer",
// …); "null" is left out. An empty result means any type.
func SchemaTypes(s *jsonschema.Schema) []string {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	var out []string
	for _, t := range types {
		if t != "null" {
			out = append(out, t)
		}
	}
	return out
}

func typeAccepts(s *jsonschema.Schema, got string) bool {
	types := SchemaTypes(s)
	if len(types) == 0 {
		return true
	}
	if got == "null" {
		return len(s.Types) > 0 && slices.Contains(s.Types, "null")
	}
	for _, t := range types {
		if t == got || (t == "number" && got == "integer") {
			return true
		}
	}
	return false
}

func describeType(s *jsonschema.Schema) string {
	types := SchemaTypes(s)
	for i, t := range types {
		switch t {
		case "array", "object", "integer":
			types[i] = "an " + t
		default:
			types[i] = "a " + t
		}
	}
	return strings.Join(types, " or ")
}

// JSONType names the JSON type of a decoded value ("integer" for whole
// numbers), as JSON Schema does.
func JSONType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case float64:
		if v == float64(int64(v)) {
			return "integer"
		}
		return "number"
	case int, int64:
		return "integer"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// normalizeNumbers turns json.Number into float64 or int64 for the schema
// validator, which does not know json.Number.
func normalizeNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case []any:
		for i := range v {
			v[i] = normalizeNumbers(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = normalizeNumbers(v[k])
		}
	}
	return v
}

func enumList(values []any) string {
	s := make([]string, len(values))
	for i, v := range values {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ", ")
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
