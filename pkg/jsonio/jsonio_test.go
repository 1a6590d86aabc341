package jsonio

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/creack/pty"
)

func TestIsTerminal(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if IsTerminal(null) {
		t.Error("/dev/null is not a terminal")
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty here: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if !IsTerminal(tty) {
		t.Error("a pty is a terminal")
	}
	if IsTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is not a terminal")
	}
}

func TestPrinter(t *testing.T) {
	for _, tc := range []struct {
		jq       string
		raw      bool
		terminal bool
		want     string
	}{
		{"", false, false, `{"a":"<b>","n":12345678901234567890}` + "\n"},
		{"", false, true, "{\n  \"a\": \"<b>\",\n  \"n\": 12345678901234567890\n}\n"},
		{".a", false, false, `"<b>"` + "\n"},
		{".a", true, false, "<b>\n"},
		{".n > 1", false, false, "true\n"},
		{"empty", false, false, ""},
	} {
		t.Run(tc.jq, func(t *testing.T) {
			var out bytes.Buffer
			p, err := NewPrinter(&out, tc.jq, tc.raw, tc.terminal)
			if err != nil {
				t.Fatal(err)
			}
			v := map[string]any{"a": "<b>", "n": jsonNumber("12345678901234567890")}
			if err := p.Document(context.Background(), v); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("jq %q raw %v terminal %v: %q, want %q", tc.jq, tc.raw, tc.terminal, out.String(), tc.want)
			}
		})
	}
	if _, err := NewPrinter(&bytes.Buffer{}, ".a[", false, false); err == nil || !strings.Contains(err.Error(), "invalid jq filter") {
		t.Errorf("bad filter: %v", err)
	}
}

type jsonNumber string

func (n jsonNumber) MarshalJSON() ([]byte, error) { return []byte(n), nil }

// hostile is a string a job could write: OSC 52 (set the clipboard), a
// clear screen, a one-character CSI, a bidi override and DEL.
const hostile = "a \x1b]52;c;SGVsbG8=\x07 b \x1b[2J c \u009b31m d \u202e e \x7f f\n"

func TestRawStringsAreEscapedOnlyOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		terminal bool
		want     string
	}{
		{true, `a \u001b]52;c;SGVsbG8=\u0007 b \u001b[2J c \u009b31m d \u202e e \u007f f` + "\n\n"},
		{false, hostile + "\n"},
	} {
		var out bytes.Buffer
		p, err := NewPrinter(&out, ".s", true, tc.terminal)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Document(context.Background(), map[string]string{"s": hostile}); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.want {
			t.Errorf("terminal %v: %q, want %q", tc.terminal, out.String(), tc.want)
		}
	}
}

func TestJSONOnATerminalEscapesWhatGoLeavesRaw(t *testing.T) {
	v := map[string]string{"s": hostile + " \u0085 \u2066 \u200f"}
	print := func(jq string, terminal bool) string {
		var out bytes.Buffer
		p, err := NewPrinter(&out, jq, false, terminal)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Document(context.Background(), v); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	for _, jq := range []string{"", "."} {
		shown, piped := print(jq, true), print(jq, false)
		if strings.Contains(shown, "\x7f") {
			t.Errorf("jq %q: DEL reaches the terminal raw: %s", jq, shown)
		}
		for _, raw := range []string{"\u009b", "\u0085", "\u202e", "\u2066", "\u200f"} {
			if strings.Contains(shown, raw) {
				t.Errorf("jq %q: %q reaches the terminal raw: %s", jq, raw, shown)
			}
			if !strings.Contains(piped, raw) {
				t.Errorf("jq %q: piped JSON lost the raw %q it has always had: %s", jq, raw, piped)
			}
		}
		if want := `\u009b31m d \u202e e \u007f f\n \u0085 \u2066 \u200f"`; !strings.Contains(shown, want) {
			t.Errorf("jq %q: %s lacks %s", jq, shown, want)
		}
		var fromTerminal, fromPipe any
		if err := json.Unmarshal([]byte(shown), &fromTerminal); err != nil {
			t.Fatalf("jq %q: the terminal's JSON does not decode: %v", jq, err)
		}
		if err := json.Unmarshal([]byte(piped), &fromPipe); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fromTerminal, fromPipe) {
			t.Errorf("jq %q: the terminal shows %v, a pipe gets %v", jq, fromTerminal, fromPipe)
		}
	}
	if want, _ := Marshal(v); print("", false) != string(want)+"\n" {
		t.Errorf("piped JSON is not encoding/json's: %q", print("", false))
	}
}

// compact is JSON that encodes itself, unchecked, as a CompactMarshaler may.
type compact string

func (c compact) CompactJSON() ([]byte, error) { return []byte(c), nil }

func TestJSONOnATerminalShowsAStrayByteAsTheReplacementCharacter(t *testing.T) {
	var out bytes.Buffer
	p, err := NewPrinter(&out, "", false, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Document(context.Background(), compact("\"a\xffb\"")); err != nil {
		t.Fatal(err)
	}
	if want := `"a\ufffdb"` + "\n"; out.String() != want {
		t.Errorf("%q, want %q", out.String(), want)
	}
}
