package extract

import (
	"bytes"
	"strings"
)

var (
	pyImport   = lazyRegexp(`(?m)^[ \t]*import[ \t]+([^\n]+)`)
	pyFrom     = lazyRegexp(`(?m)^[ \t]*from[ \t]+([.\w]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]+)`)
	pyDef      = lazyRegexp(`(?m)^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(([^)]*)\)`)
	pyClass    = lazyRegexp(`(?m)^([ \t]*)class[ \t]+(\w+)`)
	pyAssign   = lazyRegexp(`(?m)^(\w+)[ \t]*(?::[^=\n]+)?=[^=]`)
	pyAll      = lazyRegexp(`(?m)^__all__[ \t]*(?::[^=\n]+)?=[ \t]*[\[(]([^\])]*)[\])]`)
	pyStrQuote = lazyRegexp(`['"]([^'"]+)['"]`)
)

// scanPython reads a Python module. Methods are reported as Class.name;
// exports are __all__ when the module defines it, else its public top-level
// names.
func scanPython(src []byte) *Symbols {
	code := blankPython(src)
	text := string(code)
	at := func(off int) int { return lineAt(code, off) }
	imports, funcs, types := []Import{}, []Function{}, []TypeDecl{}

	for _, m := range pyImport().FindAllStringSubmatchIndex(text, -1) {
		for _, mod := range splitList(strings.TrimRight(text[m[2]:m[3]], "\\ \t")) {
			name, alias, _ := strings.Cut(mod, " as ")
			items := []string{}
			if alias != "" {
				items = append(items, strings.TrimSpace(alias))
			}
			imports = append(imports, Import{From: strings.TrimSpace(name), Items: items, Line: at(m[0]), Kind: "import"})
		}
	}
	for _, m := range pyFrom().FindAllStringSubmatchIndex(text, -1) {
		items := []string{}
		for _, it := range splitList(strings.Trim(text[m[4]:m[5]], "()\\ \t")) {
			name, _, _ := strings.Cut(it, " as ")
			items = append(items, strings.TrimSpace(name))
		}
		imports = append(imports, Import{From: text[m[2]:m[3]], Items: items, Line: at(m[0]), Kind: "import"})
	}
	type class struct {
		name   string
		indent int
	}
	var classes []class  // open classes, by indentation
	var public exportSet // top-level names, with the line defining each
	events := map[int]func(){}
	for _, m := range pyClass().FindAllStringSubmatchIndex(text, -1) {
		name, indent := text[m[4]:m[5]], m[3]-m[2]
		types = append(types, TypeDecl{Name: name, Kind: "class", Line: at(m[0])})
		if indent == 0 {
			public.add(name, at(m[0]))
		}
		events[m[0]] = func() { classes = append(classes, class{name, indent}) }
	}
	for _, m := range pyDef().FindAllStringSubmatchIndex(text, -1) {
		events[m[0]] = func() {
			indent := m[3] - m[2]
			for len(classes) > 0 && classes[len(classes)-1].indent >= indent {
				classes = classes[:len(classes)-1]
			}
			name := text[m[4]:m[5]]
			if indent == 0 {
				public.add(name, at(m[0]))
			} else if len(classes) > 0 {
				name = classes[len(classes)-1].name + "." + name
			}
			funcs = append(funcs, Function{Name: name, Line: at(m[0]), Params: splitList(text[m[6]:m[7]])})
		}
	}
	for _, off := range sortedOffsets(events) {
		events[off]()
	}
	for _, m := range pyAssign().FindAllStringSubmatchIndex(text, -1) {
		public.add(text[m[2]:m[3]], at(m[0]))
	}
	var exports exportSet
	if m := pyAll().FindStringSubmatchIndex(text); m != nil {
		for _, q := range pyStrQuote().FindAllStringSubmatch(text[m[2]:m[3]], -1) {
			line, defined := public.lines[q[1]]
			if !defined {
				line = at(m[0]) // only listed: cite __all__
			}
			exports.add(q[1], line)
		}
	} else {
		for _, name := range public.names {
			if !strings.HasPrefix(name, "_") {
				exports.add(name, public.lines[name])
			}
		}
	}
	sortByLine(imports, func(i Import) int { return i.Line })
	syms := &Symbols{Imports: &imports, Functions: &funcs, Types: &types}
	exports.into(syms)
	return syms
}

// blankPython blanks # comments and the inside of triple-quoted strings
// (docstrings and the code examples they hold), keeping newlines, so only
// code is read as code. One-line strings stay: __all__ lists names in them.
func blankPython(src []byte) []byte {
	out := []byte(string(src))
	blank := func(from, to int) {
		for ; from < to; from++ {
			if out[from] != '\n' {
				out[from] = ' '
			}
		}
	}
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case c == '#':
			end := bytes.IndexByte(out[i:], '\n')
			if end < 0 {
				end = len(out) - i
			}
			blank(i, i+end)
			i += end
		case (c == '"' || c == '\'') && bytes.HasPrefix(out[i:], []byte{c, c, c}):
			end := closingTriple(out, i+3, c)
			blank(i+3, end)
			i = min(end+2, len(out))
		case c == '"' || c == '\'':
			for i++; i < len(out) && out[i] != c && out[i] != '\n'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
		}
	}
	return out
}

// closingTriple is the offset of the three quotes closing a triple-quoted
// string whose text starts at from (the end of src if it never closes).
func closingTriple(src []byte, from int, quote byte) int {
	for i := from; i < len(src); i++ {
		switch {
		case src[i] == '\\':
			i++
		case bytes.HasPrefix(src[i:], []byte{quote, quote, quote}):
			return i
		}
	}
	return len(src)
}

func sortedOffsets(m map[int]func()) []int {
	offs := make([]int, 0, len(m))
	for k := range m {
		offs = append(offs, k)
	}
	sortByLine(offs, func(i int) int { return i })
	return offs
}
