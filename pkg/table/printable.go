package table

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable replaces what a terminal would interpret rather than show —
// control characters (escape sequences start with one), bidirectional
// overrides and bytes that are not UTF-8 — with visible escapes. Line
// breaks and tabs stay.
func Printable(s string) string {
	return escape(s, true)
}

// printableLine is Printable for text that has one line of its own (a
// summary line, a cell): a line break shows as \n, so a name cannot make
// a line that looks like lm's.
func printableLine(s string) string {
	return escape(s, false)
}

// Interpreted reports whether a terminal would act on r rather than show
// it: a control character (escape sequences start with one) or a
// bidirectional control.
func Interpreted(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

func escape(s string, breaks bool) string {
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r == '\t' || r == '\n' && breaks:
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case Interpreted(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		s = s[size:]
	}
	return b.String()
}
