package client_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"lmtool.dev/lm/pkg/servers/client"
	"lmtool.dev/lm/pkg/store"
)

// terminal is lm run behind a pty: stdin and stderr are the terminal (the
// prompt), stdout a pipe (the JSON output).
type terminal struct {
	t      *testing.T
	cmd    *exec.Cmd
	tty    *os.File
	stdout bytes.Buffer
	out    chan string
	seen   strings.Builder // since the last answer
	all    strings.Builder // the whole session
}

func startTerminal(t *testing.T, env []string, args ...string) *terminal {
	t.Helper()
	term := &terminal{t: t, cmd: exec.Command(os.Args[0], args...), out: make(chan string, 256)}
	term.cmd.Env = append(os.Environ(), append([]string{"LM_TEST_AS_LM=1"}, env...)...)
	term.cmd.Stdout = &term.stdout
	tty, err := pty.Start(term.cmd)
	if err != nil {
		t.Fatal(err)
	}
	term.tty = tty
	t.Cleanup(func() { tty.Close() })
	go func() {
		r := bufio.NewReader(tty)
		var chunk []byte
		for {
			b, err := r.ReadByte()
			if err != nil { // EIO once the child exits
				term.out <- string(chunk)
				close(term.out)
				return
			}
			chunk = append(chunk, b)
			if b == '\n' || b == ' ' {
				term.out <- string(chunk)
				chunk = nil
			}
		}
	}()
	return term
}

// waitFor reads the terminal until want appears.
func (term *terminal) waitFor(want string) {
	term.t.Helper()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(term.seen.String(), want) {
		select {
		case s, ok := <-term.out:
			if !ok {
				term.t.Fatalf("lm ended before %q:\n%s", want, term.seen.String())
			}
			term.seen.WriteString(s)
			term.all.WriteString(s)
		case <-deadline:
			term.t.Fatalf("no %q within 30s:\n%s", want, term.seen.String())
		}
	}
}

// answer waits for the next prompt and types line.
func (term *terminal) answer(line string) {
	term.t.Helper()
	term.waitFor("[n]o: ")
	term.consume()
	term.tty.WriteString(line + "\n")
}

// consume forgets what was seen, so the next waitFor needs new output.
func (term *terminal) consume() {
	term.seen.Reset()
}

// wait ends the session and decodes lm's output.
func (term *terminal) wait() client.AskOutput {
	term.t.Helper()
	for s := range term.out {
		term.seen.WriteString(s)
		term.all.WriteString(s)
	}
	if err := term.cmd.Wait(); err != nil {
		term.t.Fatalf("lm exited with %v:\n%s", err, term.seen.String())
	}
	var out client.AskOutput
	if err := json.Unmarshal(term.stdout.Bytes(), &out); err != nil {
		term.t.Fatalf("output %q: %v", term.stdout.String(), err)
	}
	return out
}

// askOnTerminal starts `lm servers ask REQUEST -- server-everything` with
// the fake model configured.
func askOnTerminal(t *testing.T, m *fakeModel, env []string, request string) (*terminal, string) {
	bin := everything(t)
	home := filepath.Join(t.TempDir(), "lm")
	os.MkdirAll(home, 0o700)
	m.configure(t, home)
	return startTerminal(t, append(env, "LM_HOME="+home), "servers", "ask", request, "--", bin), home
}

func historyIn(t *testing.T, home string) []client.Record {
	t.Helper()
	env := newEnv(t, true)
	env.Store = storeAt(filepath.Join(home, "lm.db"))
	out, err := call(t, env, "servers_history", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	return out.(client.HistoryOutput).Items
}

// TestAskApprovesAndRejectsOnATerminal: the call is shown in full with
// what the model wrote made harmless, an unclear answer is asked again, y
// runs the call, n rejects the next one and ends the request.
func TestAskApprovesAndRejectsOnATerminal(t *testing.T) {
	m := newFakeModel(t,
		`{"action":"call","tool":"echo","arguments":{"message":"hi\u009b31m"},"reason":"clear \u001b[2J the screen \u202e"}`,
		`{"action":"call","tool":"echo","arguments":{"message":"again"}}`,
	)
	term, home := askOnTerminal(t, m, nil, "say hi")
	term.waitFor("lm: call 1 (of at most 5) proposed: echo")
	term.waitFor(`reason: clear \u001b[2J the screen \u202e`)
	term.waitFor(`"message": "hi\u009b31m"`)
	term.answer("maybe")
	term.waitFor("Answer y, e, a or n.")
	term.answer("y")
	term.waitFor(`lm: The result of echo: [{"text":"Echo: hi`)
	term.waitFor("lm: call 2 (of at most 5) proposed: echo")
	term.answer("n")
	out := term.wait()
	if transcript := term.all.String(); strings.Contains(transcript, "\x1b") || strings.Contains(transcript, "\u202e") || strings.Contains(transcript, "\u009b") {
		t.Errorf("a control character reached the terminal:\n%q", transcript)
	}
	if out.Stopped != client.StoppedRejected || len(out.Steps) != 2 || out.Steps[0].Approval != client.VerdictApproved ||
		out.Steps[1].Approval != client.VerdictRejected || out.Steps[1].Result != nil {
		t.Fatalf("output: %s", jsonOf(out))
	}
	if h := historyIn(t, home); len(h) != 1 || h[0].Approval != client.Approved {
		t.Errorf("history: %s", jsonOf(h))
	}
}

// TestAskEditsTheArgumentsInTheEditor: the arguments open in $EDITOR; an
// edit the schema rejects is shown and asked about again, and the next edit
// starts from it; a valid edit runs.
func TestAskEditsTheArgumentsInTheEditor(t *testing.T) {
	dir := t.TempDir()
	editor := filepath.Join(dir, "edit")
	// The first edit breaks the argument's type, the second fixes it; the
	// editor keeps what it was given.
	os.WriteFile(editor, []byte(`#!/bin/sh
cat "$1" >> "$SEEN"
if [ -e "$SEEN.twice" ]; then printf '{"message": "edited"}' > "$1"; else : > "$SEEN.twice"; printf '{"message": 5}' > "$1"; fi
`), 0o755)
	seen := filepath.Join(dir, "seen")
	m := newFakeModel(t,
		`{"action":"call","tool":"echo","arguments":{"message":"hi"}}`,
		`{"action":"done","answer":"It said edited."}`,
	)
	term, home := askOnTerminal(t, m, []string{"EDITOR=" + editor, "SEEN=" + seen}, "say hi")
	term.answer("e")
	term.waitFor(`the edited arguments are not valid, so the call is unchanged (e edits them again): tool echo: argument "message" must be string, got integer`)
	term.answer("e")
	term.waitFor(`lm: running echo with the edited arguments:`)
	out := term.wait()
	if out.Stopped != client.StoppedDone || out.Answer != "It said edited." || len(out.Steps) != 1 {
		t.Fatalf("output: %s", jsonOf(out))
	}
	s := out.Steps[0]
	if s.Approval != client.VerdictEdited || jsonOf(s.Arguments) != `{"message":"edited"}` || jsonOf(s.Proposal.Arguments) != `{"message":"hi"}` ||
		!strings.Contains(jsonOf(s.Result), "Echo: edited") {
		t.Errorf("step: %s", jsonOf(s))
	}
	if data, _ := os.ReadFile(seen); string(data) != "{\n  \"message\": \"hi\"\n}\n{\"message\": 5}\n" {
		t.Errorf("the editor was given %q", data)
	}
	if msgs := m.request(t, 1).Messages; !strings.Contains(msgs[len(msgs)-2].Content, `I changed the arguments before running the call: {"message":"edited"}`) ||
		!strings.Contains(m.request(t, 1).last(), "Echo: edited") {
		t.Errorf("the model was not shown the edited call's result: %q", m.request(t, 1).last())
	}
	if h := historyIn(t, home); len(h) != 1 || h[0].Approval != client.Approved || jsonOf(h[0].Arguments) != `{"message":"edited"}` {
		t.Errorf("history: %s", jsonOf(h))
	}
}

// TestAskApprovesTheRestOfTheRequest: after a, the request's later calls
// run without asking.
func TestAskApprovesTheRestOfTheRequest(t *testing.T) {
	m := newFakeModel(t,
		`{"action":"call","tool":"echo","arguments":{"message":"one"}}`,
		`{"action":"call","tool":"echo","arguments":{"message":"two"}}`,
		`{"action":"done","answer":"Both said."}`,
	)
	term, _ := askOnTerminal(t, m, nil, "say one, then two")
	term.answer("a")
	out := term.wait()
	if n := strings.Count(term.all.String(), "[n]o: "); n != 1 {
		t.Errorf("asked %d times, not once, before approving the rest:\n%s", n, term.all.String())
	}
	if len(out.Steps) != 2 || out.Steps[0].Approval != client.VerdictApprovedRest || out.Steps[1].Approval != client.VerdictApprovedRest ||
		!strings.Contains(jsonOf(out.Steps[1].Result), "Echo: two") || out.Answer != "Both said." {
		t.Fatalf("output: %s", jsonOf(out))
	}
}

// TestAskRefusesWithoutATerminal: nobody could approve, so nothing starts.
func TestAskRefusesWithoutATerminal(t *testing.T) {
	m := newFakeModel(t)
	home := t.TempDir()
	m.configure(t, home)
	cmd := exec.Command(os.Args[0], "servers", "ask", "say hi", "--", "true")
	cmd.Env = append(os.Environ(), "LM_TEST_AS_LM=1", "LM_HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 5 {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "no terminal to ask on") || !strings.Contains(stderr.String(), "hint: run it on a terminal, pass --yes") {
		t.Errorf("stderr: %s", stderr.String())
	}
	if m.count() != 0 {
		t.Errorf("the model was asked %d times", m.count())
	}
}

func storeAt(path string) *store.Store { return store.New(path, 5*time.Second) }

// TestAskInterruptedAtThePrompt: Ctrl-C while lm waits for an answer ends
// it at once, and nothing runs.
func TestAskInterruptedAtThePrompt(t *testing.T) {
	m := newFakeModel(t, `{"action":"call","tool":"echo","arguments":{"message":"hi"}}`)
	term, home := askOnTerminal(t, m, nil, "say hi")
	term.waitFor("[n]o: ")
	term.tty.WriteString("\x03")
	exited := make(chan error, 1)
	go func() {
		for range term.out {
		}
		exited <- term.cmd.Wait()
	}()
	select {
	case err := <-exited:
		if err == nil {
			t.Error("lm exited 0 after Ctrl-C")
		}
	case <-time.After(30 * time.Second):
		term.cmd.Process.Kill()
		t.Fatal("lm still waits for an answer 30s after Ctrl-C")
	}
	if h := historyIn(t, home); len(h) != 0 {
		t.Errorf("history: %s", jsonOf(h))
	}
}
