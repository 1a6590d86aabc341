package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v3"

	"lmtool.dev/lm/pkg/jsonio"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/table"
)

// format is how a result is printed.
type format string

// The formats -o accepts.
const (
	formatJSON  format = "json"
	formatTable format = "table"
	formatTSV   format = "tsv"
)

// formatFlags are the flags of commands whose results have a table or text
// for people: gh's --json and kubectl's -o.
func formatFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.BoolFlag{Name: "json", Local: true,
			Usage: "print JSON even on a terminal (the default when stdout is not one, or with --jq)"},
		&ucli.StringFlag{Name: "output", Aliases: []string{"o"}, Local: true,
			Usage: "print the result as `FORMAT`: json, table or tsv (default: table on a terminal, else json)"},
	}
}

// outputFormat decides how cmd prints its result: what -o says, else JSON
// for --json, --jq or a stdout that is not a terminal, else the table
// (gh's rule, so scripts and agents always get JSON).
func (a *app) outputFormat(cmd *ucli.Command) (format, error) {
	if !hasFlag(cmd, "output") {
		return formatJSON, nil
	}
	jq := cmd.String("jq") != ""
	switch f := format(cmd.String("output")); f {
	case "":
	case formatJSON:
		return f, nil
	case formatTable, formatTSV:
		if cmd.Bool("json") || jq {
			return "", &usageError{cmd: cmd.FullName(), err: fmt.Errorf("-o %s prints no JSON: drop --json and --jq, or use -o json", f)}
		}
		return f, nil
	default:
		return "", &usageError{cmd: cmd.FullName(), err: fmt.Errorf("-o wants json, table or tsv, got %q", f)}
	}
	if cmd.Bool("json") || jq || !jsonio.IsTerminal(a.streams.Out) {
		return formatJSON, nil
	}
	return formatTable, nil
}

// colour reports whether w may get colour: a terminal, with NO_COLOR
// (no-color.org) unset and a TERM that is not dumb.
func colour(w io.Writer) bool {
	return jsonio.IsTerminal(w) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// presenter prints results in the format a run chose.
type presenter struct {
	format   format
	json     *jsonio.Printer
	out      io.Writer
	err      io.Writer
	terminal bool // out is a terminal
	colour   bool
	lastMsg  string
}

func (a *app) presenter(cmd *ucli.Command) (*presenter, error) {
	f, err := a.outputFormat(cmd)
	if err != nil {
		return nil, err
	}
	p, err := a.printer(cmd)
	if err != nil {
		return nil, err
	}
	return &presenter{format: f, json: p, out: a.streams.Out, err: a.streams.Err,
		terminal: jsonio.IsTerminal(a.streams.Out), colour: colour(a.streams.Out)}, nil
}

// document prints a command's result.
func (p *presenter) document(ctx context.Context, v any) error {
	if p.format == formatJSON {
		return p.json.Document(ctx, v)
	}
	if t, ok := v.(table.Texter); ok {
		return p.text(t)
	}
	t, ok := v.(table.Tabler)
	if !ok {
		return p.json.Document(ctx, v)
	}
	if p.format == formatTSV {
		return table.WriteTSV(p.out, t.Table(), table.TSVOptions{Terminal: p.terminal})
	}
	return table.Write(p.out, t.Table(), table.Options{Now: time.Now(), Colour: p.colour})
}

// line prints one record of a stream: text for people where the record
// has text, else a JSON line.
func (p *presenter) line(ctx context.Context, v any) error {
	if t, ok := v.(table.Texter); ok && p.format != formatJSON {
		return p.text(t)
	}
	return p.json.Line(ctx, v)
}

// text prints a result's text: exact when piped; on a terminal with what
// the terminal would interpret escaped, since the text may come from a
// program lm does not control (a job's output).
func (p *presenter) text(t table.Texter) error {
	text, status := t.Text()
	if p.terminal {
		text = table.Printable(text)
	}
	if _, err := io.WriteString(p.out, text); err != nil {
		return err
	}
	if status != "" {
		if text != "" && !strings.HasSuffix(text, "\n") {
			io.WriteString(p.out, "\n")
		}
		p.status(status)
	}
	return nil
}

// status writes lines about a result on stderr.
func (p *presenter) status(s string) {
	for _, line := range strings.Split(s, "\n") {
		fmt.Fprintf(p.err, "lm: %s\n", table.Printable(line))
	}
}

// interrupted tells a person at a terminal what became of a result cut
// short by Ctrl+C, when it has something to say (a job that keeps running).
func (p *presenter) interrupted(v any) {
	if !jsonio.IsTerminal(p.err) {
		return
	}
	if t, ok := v.(table.Texter); ok {
		if _, status := t.Text(); status != "" {
			p.status(status)
		}
	}
}

// progress says on stderr what a long wait is doing, once per new message,
// for a person at a terminal; scripts see nothing.
func (p *presenter) progress(_, _ float64, message string) {
	if message == "" || message == p.lastMsg {
		return
	}
	p.lastMsg = message
	fmt.Fprintf(p.err, "lm: %s… (Ctrl+C to stop waiting)\n", table.Printable(message))
}

// forPeople wires a person's terminal into env: progress lines on a
// terminal's stderr.
func (p *presenter) forPeople(env *op.Env) {
	if jsonio.IsTerminal(p.err) {
		env.Progress = p.progress
	}
}
