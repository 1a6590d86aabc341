package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	ucli "github.com/urfave/cli/v3"

	"lmtool.dev/lm/pkg/jsonio"
	"lmtool.dev/lm/pkg/op"
)

// reservedFlags are global or adapter flags no operation field may shadow.
var reservedFlags = map[string]bool{
	"store": true, "jq": true, "raw-output": true, "json-errors": true, "lock-timeout": true, "verbose": true, "v": true,
	"input": true, "jsonl": true, "help": true,
}

// opCommand turns an operation into a leaf command. Its flags come later,
// from [app.complete], because deriving them reflects over the input type.
func (a *app) opCommand(o op.Operation) *ucli.Command {
	m := o.Info()
	cmd := &ucli.Command{
		Name:   m.Path[len(m.Path)-1],
		Hidden: m.Hidden,
		Usage:  m.Summary,
		Description: strings.TrimSpace(strings.Join(nonEmpty(m.Description,
			indentBlock("EXAMPLES", m.Examples), mcpLine(m)), "\n\n")),
		Action: func(ctx context.Context, cmd *ucli.Command) error {
			err := a.runOp(ctx, cmd, o)
			if err != nil {
				if _, isStatus := err.(exitStatus); !isStatus {
					err = &commandError{cmd: strings.Join(m.Path, " "), err: err}
				}
			}
			return err
		},
	}
	a.leaves = append(a.leaves, leaf{cmd: cmd, op: o})
	return cmd
}

// leaf is an operation's command, waiting for its flags.
type leaf struct {
	cmd *ucli.Command
	op  op.Operation
}

// prepare completes the commands args may invoke: those whose path words
// all appear in args, in order. Only they pay for their flags.
func (a *app) prepare(args []string) {
	for _, l := range a.leaves {
		path := l.op.Info().Path
		i := 0
		for _, arg := range args {
			if group, ok := groupAliases[arg]; ok && i == 0 {
				arg = group
			}
			if i < len(path) && arg == path[i] {
				i++
			}
		}
		if i == len(path) {
			a.complete(l)
		}
	}
}

// complete gives a leaf command its flags (from the input schema's
// top-level properties) and its argument synopsis.
func (a *app) complete(l leaf) {
	m := l.op.Info()
	schema := l.op.InputSchema()
	cmd := l.cmd
	cmd.ArgsUsage = argsUsage(m, schema)
	cmd.ShellComplete = a.suggest(l)
	bound := map[string]bool{}
	for _, name := range m.Args {
		bound[name] = true
	}
	for _, name := range op.FieldNames(schema) {
		// A writeOnly field holds a secret: it comes from stdin or --input,
		// never a flag, which every user sees in ps and shell history keeps.
		if bound[name] || schema.Properties[name].WriteOnly {
			continue
		}
		aliases := m.Aliases[name]
		if name == "follow" && !slices.Contains(aliases, "f") {
			aliases = append(slices.Clone(aliases), "f") // -f wherever --follow is, as tail has it
		}
		if f := flagFor(name, schema.Properties[name], aliases); f != nil {
			cmd.Flags = append(cmd.Flags, f)
		}
	}
	cmd.Flags = append(cmd.Flags, &ucli.StringFlag{Name: "input", Aliases: []string{"i"}, Local: true, TakesFile: true,
		Usage: "read the whole input as a JSON object from `FILE` (- for stdin); flags and arguments override it"})
	if m.Lines != "" {
		cmd.Flags = append(cmd.Flags, &ucli.BoolFlag{Name: "jsonl", Local: true,
			Usage: "read stdin as JSON Lines, one item per line, all in one transaction"})
	}
	if l.op.ForPeople() {
		for _, f := range formatFlags() {
			for _, n := range f.Names() {
				if slices.ContainsFunc(cmd.Flags, func(g ucli.Flag) bool { return slices.Contains(g.Names(), n) }) {
					panic(fmt.Sprintf("cli: %s: flag -%s collides with the output format flags", m.Name, n))
				}
			}
		}
		cmd.Flags = append(cmd.Flags, formatFlags()...)
	}
}

// hasFlag reports whether cmd has a flag whose own name is name. A field
// with no flag of its own (an object, say) may share its name with another
// field's alias (--checks for checks_file), which IsSet would answer for.
func hasFlag(cmd *ucli.Command, name string) bool {
	for _, f := range cmd.Flags {
		if f.Names()[0] == name {
			return true
		}
	}
	return false
}

// isSize reports whether an integer field counts bytes, so its flag takes
// units (--log-size 8MiB).
func isSize(field string) bool {
	return strings.HasSuffix(field, "_size") || strings.HasSuffix(field, "_bytes")
}

func flagName(field string) string { return strings.ReplaceAll(field, "_", "-") }

func flagFor(field string, s *jsonschema.Schema, aliases []string) ucli.Flag {
	name := flagName(field)
	for _, n := range append([]string{name}, aliases...) {
		if reservedFlags[n] {
			panic(fmt.Sprintf("cli: flag --%s of field %q collides with a global flag", n, field))
		}
	}
	usage := s.Description
	if len(s.Enum) > 0 {
		var vals []string
		for _, v := range s.Enum {
			vals = append(vals, fmt.Sprint(v))
		}
		usage += " (" + strings.Join(vals, "|") + ")"
	}
	types := op.SchemaTypes(s)
	if len(types) != 1 {
		return nil
	}
	// Defaults are hidden: an unset flag means the operation's own default,
	// which the description states, not Go's zero value.
	switch types[0] {
	case "string":
		return &ucli.StringFlag{Name: name, Aliases: aliases, Usage: usage, Local: true, HideDefault: true}
	case "integer":
		if isSize(field) {
			return &sizeFlag{Name: name, Aliases: aliases, Usage: usage + " (a size: 65536, 64KiB, 8MiB)", Local: true, HideDefault: true}
		}
		return &ucli.Int64Flag{Name: name, Aliases: aliases, Usage: usage, Local: true, HideDefault: true}
	case "number":
		return &ucli.Float64Flag{Name: name, Aliases: aliases, Usage: usage, Local: true, HideDefault: true}
	case "boolean":
		return &ucli.BoolFlag{Name: name, Aliases: aliases, Usage: usage, Local: true, HideDefault: true}
	case "array":
		if s.Items != nil && len(op.SchemaTypes(s.Items)) == 1 && op.SchemaTypes(s.Items)[0] == "string" {
			if !strings.Contains(usage, "repeatable") {
				usage += " (repeatable)"
			}
			return &ucli.StringSliceFlag{Name: name, Aliases: aliases, Usage: usage, Local: true, HideDefault: true}
		}
	}
	return nil // objects and other arrays come through --input
}

// runOp assembles the input (--input, then flags, then positional
// arguments, then stdin), calls the operation and prints its result.
func (a *app) runOp(ctx context.Context, cmd *ucli.Command, o op.Operation) error {
	m := o.Info()
	if !m.Stream && !m.Hidden && os.Getenv("GOGC") == "" {
		// A one-shot command ends before memory matters: collect less
		// often. Streams and supervisors run long and keep the default.
		debug.SetGCPercent(400)
	}
	schema := o.InputSchema()
	present, err := a.presenter(cmd)
	if err != nil {
		return err
	}
	in := map[string]any{}
	if src := cmd.String("input"); src != "" {
		if err := a.readInputObject(src, in); err != nil {
			return err
		}
	}
	for _, name := range op.FieldNames(schema) {
		fn := flagName(name)
		if !hasFlag(cmd, fn) || !cmd.IsSet(fn) {
			continue
		}
		in[name] = cmd.Value(fn)
	}
	positional := cmd.Args().Slice()
	if m.Trailing != "" {
		var trailing []string
		positional, trailing = a.splitTrailing(positional)
		if len(trailing) > 0 {
			in[m.Trailing] = trailing
		}
	}
	if err := bindArgs(cmd, m, schema, positional, in); err != nil {
		return err
	}
	if m.Lines != "" && cmd.Bool("jsonl") {
		items, err := readLines(a.streams.In, m.DecodeLine)
		if err != nil {
			return err
		}
		in[m.Lines] = items
	} else if f := m.StdinText; f != "" {
		if v, set := in[f]; (!set && !jsonio.IsTerminal(a.streams.In)) || v == "-" {
			text, err := io.ReadAll(a.streams.In)
			if err != nil {
				return fmt.Errorf("read stdin: %w", err)
			}
			in[f] = strings.TrimRight(string(text), "\r\n")
		}
	}
	if err := missingArgs(cmd, m, schema, in); err != nil {
		return err
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return err
	}
	env, err := a.env(cmd)
	if err != nil {
		return err
	}
	env.Emit = func(v any) error { return present.line(ctx, v) }
	present.forPeople(env)
	var delivered []func()
	env.AfterReply = func(_ string, fn func()) { delivered = append(delivered, fn) }
	out, err := o.Call(ctx, env, raw)
	if err != nil {
		if ctx.Err() != nil {
			present.interrupted(out)
		}
		return err
	}
	if !m.Stream {
		if err := present.document(ctx, out); err != nil {
			return err
		}
	}
	for _, fn := range delivered { // printed: the reply is the caller's now
		fn()
	}
	if n, ok := out.(interface{ Notes() []string }); ok {
		for _, note := range n.Notes() {
			fmt.Fprintf(a.streams.Err, "lm: %s: %s\n", strings.Join(m.Path, " "), note)
		}
	}
	if ex, ok := out.(op.Exiter); ok && ex.ExitCode() != 0 {
		return exitStatus(ex.ExitCode())
	}
	return nil
}

// splitTrailing separates the words after the command line's first "--"
// from the positional arguments before it. urfave/cli drops the "--" itself,
// so the trailing words are recognised as the arguments' tail.
func (a *app) splitTrailing(args []string) (positional, trailing []string) {
	i := slices.Index(a.args, "--")
	if i < 0 {
		return args, nil
	}
	trailing = a.args[i+1:]
	if len(trailing) > len(args) || !slices.Equal(args[len(args)-len(trailing):], trailing) {
		return args, nil
	}
	return args[:len(args)-len(trailing)], trailing
}

// bindArgs maps positional arguments onto input fields.
func bindArgs(cmd *ucli.Command, m op.Meta, schema *jsonschema.Schema, args []string, in map[string]any) error {
	for i, field := range m.Args {
		if i >= len(args) {
			break
		}
		prop := schema.Properties[field]
		last := i == len(m.Args)-1
		types := op.SchemaTypes(prop)
		kind := ""
		if len(types) == 1 {
			kind = types[0]
		}
		switch {
		case kind == "array" && last:
			in[field] = args[i:]
			return nil
		case kind == "array":
			in[field] = []string{args[i]}
		case kind == "string" && last && field == m.StdinText:
			in[field] = strings.Join(args[i:], " ")
			return nil
		case kind == "integer":
			n, err := strconv.ParseInt(args[i], 10, 64)
			if err != nil {
				return &usageError{cmd: cmd.FullName(), err: fmt.Errorf("argument %s must be a whole number, got %q", strings.ToUpper(field), args[i])}
			}
			in[field] = n
		default:
			in[field] = args[i]
		}
	}
	if len(args) > len(m.Args) {
		return &usageError{cmd: cmd.FullName(), err: fmt.Errorf("too many arguments: %q", args[len(m.Args):])}
	}
	return nil
}

// missingArgs refuses a command line without a required positional
// argument, naming it as the synopsis does.
func missingArgs(cmd *ucli.Command, m op.Meta, schema *jsonschema.Schema, in map[string]any) error {
	for _, field := range m.Args {
		if _, set := in[field]; set || !slices.Contains(schema.Required, field) {
			continue
		}
		return &usageError{cmd: cmd.FullName(), err: fmt.Errorf("missing argument %s", strings.ToUpper(field)),
			hint: fmt.Sprintf("usage: %s [options] %s", cmd.FullName(), cmd.ArgsUsage)}
	}
	return nil
}

// readInputObject merges a JSON object from a file or stdin into in.
func (a *app) readInputObject(src string, in map[string]any) error {
	var r io.Reader = a.streams.In
	name := "stdin"
	if src != "-" {
		f, err := os.Open(src)
		if err != nil {
			return op.Errorf(op.KindInvalid, "read --input: %w", err)
		}
		defer f.Close()
		r, name = f, src
	}
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil {
		return op.Errorf(op.KindInvalid, "--input %s is not a JSON object: %v", name, err)
	}
	return nil
}

// readLines decodes JSON Lines; any bad line fails the whole batch before
// anything is written.
func readLines(r io.Reader, decode func([]byte) (any, error)) ([]any, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 8<<20)
	items := []any{}
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		v, err := decode(line)
		if err != nil {
			return nil, op.Errorf(op.KindInvalid, "stdin line %d: %v", n, err)
		}
		items = append(items, v)
	}
	if err := sc.Err(); err != nil {
		return nil, op.Errorf(op.KindInvalid, "read stdin: %v", err)
	}
	return items, nil
}

func argsUsage(m op.Meta, schema *jsonschema.Schema) string {
	var parts []string
	for i, a := range m.Args {
		name := strings.ToUpper(a)
		types := op.SchemaTypes(schema.Properties[a])
		if i == len(m.Args)-1 && len(types) == 1 && (types[0] == "array" || types[0] == "string") && a != "id" && a != "file" {
			name += "..."
		}
		if !slices.Contains(schema.Required, a) {
			name = "[" + name + "]"
		}
		parts = append(parts, name)
	}
	if m.Trailing != "" {
		parts = append(parts, "[-- "+strings.ToUpper(m.Trailing)+"...]")
	}
	return strings.Join(parts, " ")
}

// mcpLine names the operation on the other faces: its MCP tool and its
// routes on lm gateway's API.
func mcpLine(m op.Meta) string {
	var lines []string
	if !m.CLIOnly {
		lines = append(lines, "MCP tool: "+m.Name)
	}
	var routes []string
	for _, r := range m.HTTP {
		routes = append(routes, r.Pattern())
	}
	if len(routes) > 0 {
		lines = append(lines, "HTTP (lm gateway): "+strings.Join(routes, ", "))
	}
	return strings.Join(lines, "\n")
}

func indentBlock(title, body string) string {
	if body == "" {
		return ""
	}
	return title + "\n  " + strings.ReplaceAll(body, "\n", "\n  ")
}

func nonEmpty(parts ...string) []string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
