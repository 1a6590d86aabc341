package extract

import (
	"bytes"
	"cmp"
	"regexp"
	"regexp/syntax"
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

// pattern is a search pattern, compiled.
type pattern struct {
	source string // as the caller wrote it
	re     *regexp.Regexp
	// literal is a string every match contains, set only when no match can
	// span lines: then only the lines that hold it are searched, so a file
	// without it costs one bytes.Index instead of a pass of the regex.
	literal []byte
}

// compilePattern compiles p in multi-line mode.
func compilePattern(p string) (pattern, error) {
	expr := "(?m)" + p
	re, err := regexp.Compile(expr)
	if err != nil {
		return pattern{}, err
	}
	pat := pattern{source: p, re: re}
	// The same parse regexp.Compile made: the tree says what a match must
	// hold and whether it can leave its line.
	if tree, err := syntax.Parse(expr, syntax.Perl); err == nil && lineLocal(tree) {
		if lit := requiredLiteral(tree); lit != "" {
			pat.literal = []byte(lit)
		}
	}
	return pat, nil
}

// findAll is re.FindAllIndex(content, n) for n > 0. With a literal, it
// runs the regex on each line holding the literal, alone: a match of a
// line-local pattern lies within one line, and ^, $, \b and \B judge a
// line's ends as they judge the text's, both being next to a newline or to
// nothing.
func (p pattern) findAll(content []byte, n int) [][]int {
	if p.literal == nil {
		return p.re.FindAllIndex(content, n)
	}
	var locs [][]int
	for from := 0; from <= len(content) && len(locs) < n; { // from is a line's start
		i := bytes.Index(content[from:], p.literal)
		if i < 0 {
			break
		}
		i += from
		start := from + bytes.LastIndexByte(content[from:i], '\n') + 1
		end := bytes.IndexByte(content[i:], '\n')
		if end < 0 {
			end = len(content)
		} else {
			end += i
		}
		line := content[start:end]
		lineLocs := [][]int{p.re.FindIndex(line)}
		// A line most often holds one match: FindAllIndex would allocate
		// room for ten. Only a line holding the literal again after the
		// first match can hold another.
		if first := lineLocs[0]; first == nil {
			lineLocs = nil
		} else if bytes.Contains(line[first[1]:], p.literal) {
			lineLocs = p.re.FindAllIndex(line, n-len(locs))
		}
		for _, loc := range lineLocs {
			loc[0], loc[1] = start+loc[0], start+loc[1]
			locs = append(locs, loc)
		}
		from = end + 1
	}
	return locs
}

// lineLocal reports whether every match of re lies within one line and
// depends on nothing past that line's ends: nothing in it matches a
// newline, and it asserts only what holds alike at a line's ends and the
// text's (^ and $ in multi-line mode, \b, \B), not \A or \z.
func lineLocal(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpAnyChar, syntax.OpBeginText, syntax.OpEndText:
		return false
	case syntax.OpLiteral:
		return !slices.Contains(re.Rune, '\n')
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= '\n' && '\n' <= re.Rune[i+1] {
				return false
			}
		}
	}
	for _, sub := range re.Sub {
		if !lineLocal(sub) {
			return false
		}
	}
	return true
}

// requiredLiteral is the longest case-sensitive string found whole in
// every match of re, or "" when it finds none. A literal naming U+FFFD is
// not taken: the regex matches it on invalid UTF-8, which bytes.Index
// would not find.
func requiredLiteral(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 || slices.Contains(re.Rune, utf8.RuneError) {
			return ""
		}
		return string(re.Rune)
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		longest := ""
		for _, sub := range re.Sub {
			if lit := requiredLiteral(sub); len(lit) > len(longest) {
				longest = lit
			}
		}
		return longest
	}
	return ""
}

// matchPatterns finds every match of every pattern, in file order, up to
// limit in all.
func matchPatterns(content []byte, patterns []pattern, limit int) FileResult {
	r := FileResult{}
	for _, p := range patterns {
		locs := p.findAll(content, limit+1)
		r.Matches = slices.Grow(r.Matches, min(len(locs), limit-len(r.Matches)))
		// Lines are counted incrementally: matches come in offset order.
		line, lineStart, counted := 1, 0, 0
		for _, loc := range locs {
			if pastLastLine(content, loc[0]) {
				break // an empty match after the final newline: no line is there
			}
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
			r.Matches = append(r.Matches, Match{Pattern: p.source, Line: line, Column: from + 1, Match: match, Text: text})
		}
	}
	if len(patterns) > 1 { // one pattern's matches come in file order already
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

// pastLastLine reports whether offset is the end of a text that ends a
// line there (or is empty): in multi-line mode ^ and $ still match at that
// point, but it begins no line, so rg and grep report nothing there.
func pastLastLine(content []byte, offset int) bool {
	return offset == len(content) && (offset == 0 || content[offset-1] == '\n')
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
