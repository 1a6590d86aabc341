package extract

import (
	"bytes"
	"cmp"
	"regexp"
	"slices"
	"unicode/utf8"
)

// Match is one regex match.
type Match struct {
	Pattern string `json:"pattern"`
	Line    int    `json:"line"`
	Column  int    `json:"column" jsonschema:"1-based byte column"`
	Match   string `json:"match"`
	Text    string `json:"text" jsonschema:"the line the match starts on (at most 300 bytes)"`
}

const maxLineText = 300

// matchPatterns finds every match of every pattern, in file order, up to
// limit in all.
func matchPatterns(content []byte, res []*regexp.Regexp, patterns []string, limit int) FileResult {
	r := FileResult{}
	for i, re := range res {
		// Lines are counted incrementally: matches come in offset order.
		line, lineStart, counted := 1, 0, 0
		for _, loc := range re.FindAllIndex(content, limit+1) {
			if len(r.Matches) >= limit {
				r.Truncated = true
				break
			}
			nl := bytes.Count(content[counted:loc[0]], []byte{'\n'})
			if nl > 0 {
				line += nl
				lineStart = bytes.LastIndexByte(content[:loc[0]], '\n') + 1
			}
			counted = loc[0]
			lineEnd := bytes.IndexByte(content[loc[0]:], '\n')
			if lineEnd < 0 {
				lineEnd = len(content)
			} else {
				lineEnd += loc[0]
			}
			text := clip(bytes.TrimRight(content[lineStart:lineEnd], "\r"))
			// A match within the line it starts on shares the line's string.
			match, from, to := "", loc[0]-lineStart, loc[1]-lineStart
			if to <= len(text) && text[from:to] == string(content[loc[0]:loc[1]]) {
				match = text[from:to]
			} else {
				match = clip(content[loc[0]:loc[1]])
			}
			r.Matches = append(r.Matches, Match{Pattern: patterns[i], Line: line, Column: from + 1, Match: match, Text: text})
		}
	}
	if len(res) > 1 { // one pattern's matches come in file order already
		slices.SortStableFunc(r.Matches, func(a, b Match) int {
			return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
		})
	}
	for _, m := range r.Matches {
		if n := len(r.LineNumbers); n == 0 || r.LineNumbers[n-1] != m.Line {
			r.LineNumbers = append(r.LineNumbers, m.Line)
		}
	}
	r.Found = len(r.Matches) > 0
	return r
}

// clip cuts b to maxLineText bytes without splitting a UTF-8 sequence.
func clip(b []byte) string {
	if len(b) <= maxLineText {
		return string(b)
	}
	b = b[:maxLineText]
	// Drop a multi-byte sequence the cut left incomplete.
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				b = b[:i]
			}
			break
		}
	}
	return string(b) + "…"
}
