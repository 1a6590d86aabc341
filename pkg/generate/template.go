package generate

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Template is a parsed template in the Handlebars syntax spec 001's
// templates (summary.md.hbs, …) are written in:
//
//	{{name}} {{a.b}} {{this}} {{this.name}} {{../name}} {{@root.name}}
//	{{@index}} {{@key}} {{@first}} {{@last}}          inside #each
//	{{#each list}}…{{else}}…{{/each}}                  arrays and objects
//	{{#if x}}…{{else}}…{{/if}}  {{#unless x}}…{{/unless}}  {{^x}}…{{/x}}
//	{{#with obj}}…{{/with}}     {{! comment }} {{!-- comment --}}
//	{{{name}}} (the same as {{name}}: output is text, nothing is escaped)
//	\{{ (a literal {{)   {{~ and ~}} (trim the whitespace on that side)
//
// A line holding only a block tag, {{else}} or a comment leaves no trace in
// the output, so blocks can sit on lines of their own.
type Template struct {
	nodes []node
	// Description is the text of a comment that opens the template.
	Description string
}

type node interface{}

type textNode struct{ text string }

type varNode struct {
	path path
	pos  pos
}

type blockNode struct {
	helper        string // each, if, unless, with
	path          path
	body, inverse []node
	pos           pos
}

// pos is a line and column in the template, for messages.
type pos struct{ line, col int }

func (p pos) String() string { return fmt.Sprintf("line %d column %d", p.line, p.col) }

// path is a variable reference.
type path struct {
	raw   string
	up    int    // ../ count
	root  bool   // @root
	data  string // @index, @key, @first, @last
	parts []string
}

// SyntaxError is a template that cannot be parsed.
type SyntaxError struct {
	Pos pos
	Msg string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("template %s: %s", e.Pos, e.Msg) }

// token kinds
const (
	tText = iota
	tVar
	tOpen
	tClose
	tElse
	tComment
)

type token struct {
	kind       int
	text       string // tText: the text; tComment: the comment
	helper     string // tOpen: each, if, unless, with; tClose: the name closed
	arg        string // tVar, tOpen: the path
	pos        pos
	trimBefore bool // {{~
	trimAfter  bool // ~}}
}

// Parse parses template text.
func Parse(src string) (*Template, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	standalone(toks)
	p := &parser{toks: toks}
	nodes, end, err := p.parse(false)
	if err != nil {
		return nil, err
	}
	if end != nil {
		return nil, &SyntaxError{end.pos, fmt.Sprintf("{{/%s}} closes no block", end.helper)}
	}
	t := &Template{nodes: nodes}
	for _, tk := range toks {
		if tk.kind == tComment {
			t.Description = strings.TrimSpace(tk.text)
		}
		if tk.kind != tText || strings.TrimSpace(tk.text) != "" {
			break
		}
	}
	return t, nil
}

// lex splits src into text and tags.
func lex(src string) ([]token, error) {
	var toks []token
	var text strings.Builder
	line, col := 1, 1
	advance := func(s string) {
		for _, r := range s {
			if r == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
	}
	flush := func() {
		if text.Len() > 0 {
			toks = append(toks, token{kind: tText, text: text.String()})
			text.Reset()
		}
	}
	for len(src) > 0 {
		i := strings.Index(src, "{{")
		if i < 0 {
			text.WriteString(src)
			break
		}
		if i > 0 && src[i-1] == '\\' { // \{{ is a literal {{
			text.WriteString(src[:i-1])
			text.WriteString("{{")
			advance(src[:i+2])
			src = src[i+2:]
			continue
		}
		text.WriteString(src[:i])
		advance(src[:i])
		src = src[i:]
		at := pos{line, col}
		open, close := "{{", "}}"
		switch {
		case strings.HasPrefix(src, "{{{"):
			open, close = "{{{", "}}}"
		case strings.HasPrefix(src, "{{!--"):
			open, close = "{{!--", "--}}"
		}
		end := strings.Index(src[len(open):], close)
		if end < 0 {
			return nil, &SyntaxError{at, fmt.Sprintf("%s is never closed with %s", open, close)}
		}
		inner := src[len(open) : len(open)+end]
		whole := src[:len(open)+end+len(close)]
		tok, err := tag(open, inner, close, at)
		if err != nil {
			return nil, err
		}
		flush()
		toks = append(toks, tok)
		advance(whole)
		src = src[len(whole):]
	}
	flush()
	applyTrims(toks)
	return toks, nil
}

// tag classifies one tag's content.
func tag(open, inner, close string, at pos) (token, error) {
	t := token{pos: at}
	if open == "{{{" {
		inner = strings.TrimSpace(inner)
		t.kind, t.arg = tVar, inner
		return t, checkPath(inner, at)
	}
	if close == "--}}" {
		t.kind, t.text = tComment, inner
		return t, nil
	}
	if strings.HasPrefix(inner, "~") {
		t.trimBefore, inner = true, inner[1:]
	}
	if strings.HasSuffix(inner, "~") {
		t.trimAfter, inner = true, inner[:len(inner)-1]
	}
	if strings.HasPrefix(inner, "!") {
		t.kind, t.text = tComment, inner[1:]
		return t, nil
	}
	inner = strings.TrimSpace(inner)
	switch {
	case inner == "":
		return t, &SyntaxError{at, "empty {{ }}"}
	case inner == "else" || inner == "^":
		t.kind = tElse
		return t, nil
	case inner[0] == '#' || inner[0] == '^':
		fields := strings.Fields(inner[1:])
		helper := ""
		if inner[0] == '^' {
			helper = "unless"
			fields = append([]string{helper}, fields...)
		} else if len(fields) > 0 {
			helper = fields[0]
		}
		switch helper {
		case "each", "if", "unless", "with":
		default:
			return t, &SyntaxError{at, fmt.Sprintf("unknown block {{%s}}: blocks are #each, #if, #unless and #with", inner)}
		}
		if len(fields) != 2 {
			return t, &SyntaxError{at, fmt.Sprintf("{{%s}} takes exactly one variable", inner)}
		}
		t.kind, t.helper, t.arg = tOpen, helper, fields[1]
		if inner[0] == '^' {
			t.helper = "^" + fields[1] // closed by {{/name}}
		}
		return t, checkPath(t.arg, at)
	case inner[0] == '/':
		t.kind, t.helper = tClose, strings.TrimSpace(inner[1:])
		return t, nil
	}
	if strings.ContainsAny(inner, " \t\n") {
		return t, &SyntaxError{at, fmt.Sprintf("{{%s}}: helpers and arguments are not supported, only variables", inner)}
	}
	t.kind, t.arg = tVar, inner
	return t, checkPath(inner, at)
}

func checkPath(s string, at pos) error {
	_, err := parsePath(s)
	if err != nil {
		return &SyntaxError{at, err.Error()}
	}
	return nil
}

// parsePath reads name, a.b, this, this.a, ., ./a, ../a, @root.a, @index.
func parsePath(s string) (path, error) {
	p := path{raw: s}
	if s == "" {
		return p, fmt.Errorf("empty variable name")
	}
	switch s {
	case "@index", "@key", "@first", "@last":
		p.data = s[1:]
		return p, nil
	case "this", ".":
		return p, nil
	}
	if rest, ok := strings.CutPrefix(s, "@root"); ok {
		if rest != "" && !strings.HasPrefix(rest, ".") {
			return p, fmt.Errorf("unknown data variable %q: use @index, @key, @first, @last or @root", s)
		}
		p.root, s = true, strings.TrimPrefix(rest, ".")
		if s == "" {
			return p, nil
		}
	} else if strings.HasPrefix(s, "@") {
		return p, fmt.Errorf("unknown data variable %q: use @index, @key, @first, @last or @root", s)
	}
	for strings.HasPrefix(s, "../") {
		p.up, s = p.up+1, s[3:]
	}
	for _, prefix := range []string{"this.", "./", "this/"} {
		s = strings.TrimPrefix(s, prefix)
	}
	if s == "" || s == "this" || s == ".." {
		if s == ".." {
			p.up++
		}
		return p, nil
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" || strings.ContainsAny(part, "{}/\\\"'`()=|") {
			return p, fmt.Errorf("invalid variable name %q", p.raw)
		}
		p.parts = append(p.parts, part)
	}
	return p, nil
}

// applyTrims honours {{~ and ~}}.
func applyTrims(toks []token) {
	for i, t := range toks {
		if t.kind == tText {
			continue
		}
		if t.trimBefore && i > 0 && toks[i-1].kind == tText {
			toks[i-1].text = strings.TrimRight(toks[i-1].text, " \t\r\n")
		}
		if t.trimAfter && i+1 < len(toks) && toks[i+1].kind == tText {
			toks[i+1].text = strings.TrimLeft(toks[i+1].text, " \t\r\n")
		}
	}
}

// standalone removes the line of a block tag, {{else}} or comment that is
// alone on its line (Mustache's and Handlebars' rule), so templates can put
// blocks on lines of their own without leaving blank lines behind. Every
// decision is made on the original text, then the cuts are applied.
func standalone(toks []token) {
	start := make([]int, len(toks)) // bytes to drop from a text's start
	end := make([]int, len(toks))   // where a text's kept part ends
	for i, t := range toks {
		end[i] = len(t.text)
	}
	for i, t := range toks {
		if t.kind == tText || t.kind == tVar {
			continue
		}
		cutBefore, cutAfter := -1, -1
		if i > 0 { // the text before, back to the line start, must be blank
			if toks[i-1].kind != tText {
				continue
			}
			text := toks[i-1].text
			nl := strings.LastIndexByte(text, '\n')
			if strings.TrimLeft(text[nl+1:], " \t") != "" || (nl < 0 && i-1 > 0) {
				continue
			}
			cutBefore = nl + 1
		}
		if i+1 < len(toks) { // and the text after, up to the line end, too
			if toks[i+1].kind != tText {
				continue
			}
			text := toks[i+1].text
			nl := strings.IndexByte(text, '\n')
			rest := text
			if nl >= 0 {
				rest = text[:nl]
			} else if i+2 < len(toks) {
				continue
			}
			if strings.TrimRight(rest, " \t\r") != "" {
				continue
			}
			cutAfter = len(text)
			if nl >= 0 {
				cutAfter = nl + 1
			}
		}
		if cutBefore >= 0 {
			end[i-1] = min(end[i-1], cutBefore)
		}
		if cutAfter >= 0 {
			start[i+1] = max(start[i+1], cutAfter)
		}
	}
	for i := range toks {
		if toks[i].kind == tText {
			if start[i] >= end[i] {
				toks[i].text = ""
			} else {
				toks[i].text = toks[i].text[start[i]:end[i]]
			}
		}
	}
}

type parser struct {
	toks []token
	i    int
}

// parse reads nodes until the end or a closing tag, which it returns.
// An {{else}} in a block splits body from inverse.
func (p *parser) parse(inBlock bool) ([]node, *token, error) {
	var nodes []node
	for p.i < len(p.toks) {
		t := p.toks[p.i]
		p.i++
		switch t.kind {
		case tText:
			if t.text != "" {
				nodes = append(nodes, &textNode{t.text})
			}
		case tVar:
			pa, _ := parsePath(t.arg)
			nodes = append(nodes, &varNode{pa, t.pos})
		case tComment:
		case tElse:
			if !inBlock {
				return nil, nil, &SyntaxError{t.pos, "{{else}} outside a block"}
			}
			return nodes, &t, nil
		case tClose:
			return nodes, &t, nil
		case tOpen:
			b, err := p.block(t)
			if err != nil {
				return nil, nil, err
			}
			nodes = append(nodes, b)
		}
	}
	return nodes, nil, nil
}

func (p *parser) block(open token) (node, error) {
	helper, closeName := open.helper, open.helper
	if strings.HasPrefix(helper, "^") { // {{^x}} … {{/x}}
		helper, closeName = "unless", helper[1:]
	}
	pa, _ := parsePath(open.arg)
	b := &blockNode{helper: helper, path: pa, pos: open.pos}
	body, end, err := p.parse(true)
	if err != nil {
		return nil, err
	}
	b.body = body
	if end != nil && end.kind == tElse {
		inverse, end2, err := p.parse(true)
		if err != nil {
			return nil, err
		}
		if end2 != nil && end2.kind == tElse {
			return nil, &SyntaxError{end2.pos, "a second {{else}} in one block"}
		}
		b.inverse, end = inverse, end2
	}
	if end == nil {
		return nil, &SyntaxError{open.pos, fmt.Sprintf("{{#%s %s}} is never closed", helper, open.arg)}
	}
	if end.helper != closeName {
		return nil, &SyntaxError{end.pos, fmt.Sprintf("{{/%s}} closes {{#%s %s}} from %s", end.helper, helper, open.arg, open.pos)}
	}
	return b, nil
}

// Variables lists the variables the template names, sorted: top-level
// names as they are, fields of #each items as list[].field and of #with
// values as obj.field.
func (t *Template) Variables() []string {
	seen := map[string]bool{}
	var walk func(ns []node, scopes []string)
	name := func(p path, scopes []string) string {
		if p.data != "" || len(p.parts) == 0 {
			return ""
		}
		base := len(scopes) - 1 - p.up
		if p.root {
			base = 0
		}
		if base < 0 {
			return ""
		}
		return join(scopes[base], strings.Join(p.parts, "."))
	}
	walk = func(ns []node, scopes []string) {
		for _, n := range ns {
			switch n := n.(type) {
			case *varNode:
				if v := name(n.path, scopes); v != "" {
					seen[v] = true
				}
			case *blockNode:
				v := name(n.path, scopes)
				if v != "" {
					seen[v] = true
				}
				inner := scopes
				switch {
				case n.helper == "each":
					inner = append(slices.Clone(scopes), v+"[]")
				case n.helper == "with":
					inner = append(slices.Clone(scopes), v)
				}
				walk(n.body, inner)
				walk(n.inverse, scopes)
			}
		}
	}
	walk(t.nodes, []string{""})
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}
