package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/table"
)

// The verdicts on a proposed call, as lm servers ask reports them.
const (
	VerdictApproved     = "approved"      // the person approved it
	VerdictEdited       = "edited"        // the person edited the arguments, which approves it
	VerdictApprovedRest = "approved_rest" // the person approved it with the rest of the request
	VerdictAuto         = "auto"          // --yes approved it
	VerdictRejected     = "rejected"      // the person rejected it
	VerdictProposed     = "proposed"      // --dry-run only showed it
)

// approver decides whether a proposed call runs: by asking the person on
// the terminal, or as --yes or --dry-run say.
type approver struct {
	mode    string // VerdictAuto, VerdictProposed, or "" to ask
	rest    bool   // the person approved the rest of this request
	in      *bufio.Reader
	out     io.Writer
	env     *op.Env         // the terminal and $EDITOR, for edits
	pending chan answerLine // a read of the terminal under way
}

type answerLine struct {
	text string
	err  error
}

// readLine reads the person's answer, or gives up when ctx ends (Ctrl-C):
// the terminal is read only while an answer is awaited, so an editor
// started later has the terminal to itself.
func (a *approver) readLine(ctx context.Context) (string, error) {
	if a.pending == nil {
		a.pending = make(chan answerLine, 1)
		go func(done chan<- answerLine) {
			text, err := a.in.ReadString('\n')
			done <- answerLine{text, err}
		}(a.pending)
	}
	select {
	case line := <-a.pending:
		a.pending = nil
		return line.text, line.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// newApprover picks how calls are approved, and refuses before anything
// starts when nobody could approve them: a call runs only after a person
// said so, on a terminal or with --yes on lm's command line. Off the
// command line (MCP, HTTP, the page's person included) it only proposes:
// the page runs an approved call through servers_call.
func newApprover(env *op.Env, in AskInput) (*approver, error) {
	switch {
	case !env.Caller.Terminal && !env.Grant.Field("servers_ask", "yes") && !in.DryRun:
		return nil, op.Errorf(op.KindDenied, "servers_ask only proposes calls over MCP or HTTP: it never runs a call a person has not approved").
			WithHint("pass dry_run: true to get the proposal, show it to the person, and run it with servers_call once approved")
	case in.DryRun:
		return &approver{mode: VerdictProposed}, nil
	case in.Yes:
		return &approver{mode: VerdictAuto}, nil
	case !env.CanAsk():
		return nil, op.Errorf(op.KindDenied, "lm servers ask runs a call only after a person approves it, and there is no terminal to ask on").
			WithHint("run it on a terminal, pass --yes to approve every call it proposes, or --dry-run to only see the proposal")
	}
	return &approver{in: bufio.NewReader(env.Stdin), out: env.Stderr, env: env}, nil
}

// history is the approval recorded with the calls that run.
func (a *approver) history() string {
	if a.mode == VerdictAuto {
		return Auto
	}
	return Approved
}

// decide returns the verdict on a proposal and the arguments to run it
// with. On a terminal it asks until the answer is clear; an edit opens the
// arguments in $EDITOR and is checked against the tool's schema again, an
// invalid one shown and asked about again. End of input rejects.
func (a *approver) decide(ctx context.Context, tool mcp.Tool, p Proposal) (string, map[string]any, error) {
	switch {
	case a.mode != "":
		return a.mode, p.Arguments, nil
	case a.rest:
		return VerdictApprovedRest, p.Arguments, nil
	}
	draft := pretty(p.Arguments)
	for {
		fmt.Fprint(a.out, "Run it? [y]es, [e]dit the arguments, [a]pprove the rest of this request, [n]o: ")
		line, err := a.readLine(ctx)
		if ctx.Err() != nil {
			return "", nil, ctx.Err()
		}
		answer := strings.ToLower(strings.TrimSpace(line))
		if err != nil && answer == "" {
			fmt.Fprintln(a.out)
			return VerdictRejected, nil, nil
		}
		switch answer {
		case "y", "yes":
			return VerdictApproved, p.Arguments, nil
		case "a", "all":
			a.rest = true
			return VerdictApprovedRest, p.Arguments, nil
		case "n", "no":
			return VerdictRejected, nil, nil
		case "e", "edit":
			edited, err := editText(a.env, draft)
			if err != nil {
				fmt.Fprintf(a.out, "lm: %s; the call is unchanged\n", table.Printable(err.Error()))
				continue
			}
			draft = edited
			args, err := parseArguments(tool, edited)
			if err != nil {
				fmt.Fprintf(a.out, "lm: the edited arguments are not valid, so the call is unchanged (e edits them again): %s\n%s\n",
					table.Printable(err.Error()), indent(table.Printable(edited)))
				continue
			}
			fmt.Fprintf(a.out, "lm: running %s with the edited arguments:\n%s\n", table.Printable(tool.Name), indent(table.Printable(pretty(args))))
			return VerdictEdited, args, nil
		default:
			fmt.Fprintln(a.out, "Answer y, e, a or n.")
		}
	}
}

// editText opens text in $EDITOR (vi by default) on the terminal and
// returns what was saved. EDITOR may hold arguments ("code --wait"), as
// git allows.
func editText(env *op.Env, text string) (string, error) {
	f, err := os.CreateTemp("", "lm-ask-*.json")
	if err != nil {
		return "", fmt.Errorf("cannot create a file to edit: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(text + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("cannot write %s: %w", f.Name(), err)
	}
	editor := env.Getenv("EDITOR")
	if editor == "" {
		editor = "vi"
	}
	cmd := exec.Command("/bin/sh", "-c", editor+` "$1"`, "editor", f.Name())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = env.Stdin, env.Stderr, env.Stderr
	cmd.Env = op.ChildEnv(env.Environ)
	// The editor needs the terminal even when lm's output goes to a pipe.
	if tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
		defer tty.Close()
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("the editor (%s) failed: %v", editor, err)
	}
	data, err := os.ReadFile(f.Name())
	if err != nil {
		return "", fmt.Errorf("cannot read the edited file: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// parseArguments reads edited arguments: one JSON object, valid against the
// tool's input schema.
func parseArguments(tool mcp.Tool, text string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var args map[string]any
	if err := dec.Decode(&args); err != nil || args == nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	if err := Validate(tool, args); err != nil {
		if hint := op.EnvelopeOf(err).Suggestion; hint != "" {
			return nil, fmt.Errorf("%v (%s)", err, hint)
		}
		return nil, err
	}
	return args, nil
}

// showProposal prints a proposed call in full for the person to judge.
// Everything the model wrote is made printable first, so it cannot move
// the cursor, recolour or hide text on the terminal.
func showProposal(w io.Writer, p Proposal, step, maxSteps int) {
	fmt.Fprintf(w, "lm: call %d (of at most %d) proposed: %s\n", step, maxSteps, table.Printable(p.Tool))
	if p.Reason != "" {
		fmt.Fprintf(w, "  reason: %s\n", table.Printable(p.Reason))
	}
	fmt.Fprintf(w, "  arguments:\n%s\n", indent(table.Printable(pretty(p.Arguments))))
}

// showResult prints the start of a call's result for the person.
func showResult(w io.Writer, text string) {
	const limit = 500
	if len(text) > limit {
		text = text[:limit] + "…"
	}
	fmt.Fprintf(w, "lm: %s\n", table.Printable(text))
}

// pretty is indented JSON, with <, > and & left as they are.
func pretty(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if v == nil {
		v = map[string]any{}
	}
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func indent(text string) string {
	return "    " + strings.ReplaceAll(text, "\n", "\n    ")
}
