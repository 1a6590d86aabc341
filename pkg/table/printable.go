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
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		s = s[size:]
	}
	return b.String()
}
