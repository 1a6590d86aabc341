package jsonio

import (
	"bytes"
	"context"
	"os"
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
		jq     string
		raw    bool
		pretty bool
		want   string
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
			p, err := NewPrinter(&out, tc.jq, tc.raw, tc.pretty)
			if err != nil {
				t.Fatal(err)
			}
			v := map[string]any{"a": "<b>", "n": jsonNumber("12345678901234567890")}
			if err := p.Document(context.Background(), v); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("jq %q raw %v pretty %v: %q, want %q", tc.jq, tc.raw, tc.pretty, out.String(), tc.want)
			}
		})
	}
	if _, err := NewPrinter(&bytes.Buffer{}, ".a[", false, false); err == nil || !strings.Contains(err.Error(), "invalid jq filter") {
		t.Errorf("bad filter: %v", err)
	}
}

type jsonNumber string

func (n jsonNumber) MarshalJSON() ([]byte, error) { return []byte(n), nil }
