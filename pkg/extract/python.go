package extract

import (
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
	code := blankPythonComments(src)
	text := string(code)
	at := func(off int) int { return lineAt(code, off) }
	exports, imports, funcs, types := []string{}, []Import{}, []Function{}, []TypeDecl{}

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
	var classes []class // open classes, by indentation
	var public []string
	events := map[int]func(){}
	for _, m := range pyClass().FindAllStringSubmatchIndex(text, -1) {
		name, indent := text[m[4]:m[5]], m[3]-m[2]
		types = append(types, TypeDecl{Name: name, Kind: "class", Line: at(m[0])})
		if indent == 0 {
			public = append(public, name)
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
				public = append(public, name)
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
		public = append(public, text[m[2]:m[3]])
	}
	if m := pyAll().FindStringSubmatch(text); m != nil {
		for _, q := range pyStrQuote().FindAllStringSubmatch(m[1], -1) {
			exports = append(exports, q[1])
		}
	} else {
		for _, name := range public {
			if !strings.HasPrefix(name, "_") {
				exports = append(exports, name)
			}
		}
	}
	exports = dedupe(exports)
	sortByLine(imports, func(i Import) int { return i.Line })
	return &Symbols{Exports: &exports, Imports: &imports, Functions: &funcs, Types: &types}
}

// blankPythonComments blanks # comments outside strings, keeping newlines.
func blankPythonComments(src []byte) []byte {
	out := []byte(string(src))
	var quote byte
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote || c == '\n' {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		}
	}
	return out
}

func sortedOffsets(m map[int]func()) []int {
	offs := make([]int, 0, len(m))
	for k := range m {
		offs = append(offs, k)
	}
	sortByLine(offs, func(i int) int { return i })
	return offs
}
