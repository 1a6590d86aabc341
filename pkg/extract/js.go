package extract

import (
	"slices"
	"strings"
)

// The JavaScript/TypeScript scanner works on the source with comments
// blanked out (strings and template literals kept), so multi-line import
// lists and declarations are matched as text with their offsets.
var (
	jsImport     = lazyRegexp(`(?m)^[ \t]*import\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"\n]+)['"]`)
	jsImportBare = lazyRegexp(`(?m)^[ \t]*import\s*['"]([^'"\n]+)['"]`)
	jsRequire    = lazyRegexp(`(?:(?:const|let|var)\s+(\{[^}]*\}|[\w$]+)\s*=\s*)?\brequire\(\s*['"]([^'"\n]+)['"]\s*\)`)
	jsExportFrom = lazyRegexp(`(?m)^[ \t]*export\s+(type\s+)?(\*(?:\s+as\s+[\w$]+)?|\{[^}]*\})\s*from\s*['"]([^'"\n]+)['"]`)
	jsExportList = lazyRegexp(`(?m)^[ \t]*export\s+(?:type\s+)?\{([^}]*)\}`)
	jsExportDecl = lazyRegexp(`(?m)^[ \t]*export\s+(?:declare\s+)?(?:async\s+)?(?:abstract\s+)?(?:function\s*\*?|class|const\s+enum|const|let|var|interface|type|enum|namespace)\s+([\w$]+)`)
	jsExportDef  = lazyRegexp(`(?m)^[ \t]*export\s+default\b`)
	jsModuleObj  = lazyRegexp(`(?m)^[ \t]*module\.exports\s*=\s*(\{[^}]*\}|[\w$]*)`)
	// CommonJS, as TypeScript and Babel write it: exports.a = … anywhere
	// (also inside a chain exports.a = exports.b = void 0, or an enum's
	// (E || (exports.E = E = {}))), exports["a"] = …,
	// Object.defineProperty(exports, "a", {…}), and __exportStar(require("./x"),
	// exports) for export * from "./x".
	jsExportsProp  = lazyRegexp(`(?:^|[^\w$.])(?:module\.)?exports(?:\.([\w$]+)|\[\s*['"]([^'"\n]+)['"]\s*\])\s*=`)
	jsDefineExport = lazyRegexp(`\bObject\.defineProperty\(\s*(?:module\.)?exports\s*,\s*['"]([^'"\n]+)['"]`)
	jsExportStar   = lazyRegexp(`\b__exportStar\(\s*require\(\s*['"]([^'"\n]+)['"]\s*\)`)
	jsFunction     = lazyRegexp(`(?m)^[ \t]*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:async\s+)?function\s*\*?\s*([\w$]+)\s*(?:<[^>(]*>)?\s*\(([^)]*)\)`)
	jsArrow        = lazyRegexp(`(?m)^[ \t]*(?:export\s+)?(?:const|let|var)\s+([\w$]+)\s*(?::[^=\n]+)?=\s*(?:async\s+)?(?:function\s*\*?\s*[\w$]*\s*\(([^)]*)\)|\(([^)]*)\)\s*(?::[^=\n]+)?=>|([\w$]+)\s*=>)`)
	jsTypeDecl     = lazyRegexp(`(?m)^[ \t]*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(interface|enum|class|const\s+enum)\s+([\w$]+)`)
	// A type alias's head; typeAliasBody checks that "=" follows its type
	// parameters, which may hold defaults (<T = string>) and arrows.
	jsTypeAlias    = lazyRegexp(`(?m)^[ \t]*(?:export\s+)?(?:declare\s+)?type\s+([\w$]+)\s*`)
	jsAfterExports = lazyRegexp(`^\s*from\b`)
	// A class member that is a method, anchored where a member starts:
	// decorators, modifiers (1), a generator's * (2), the name (3), then
	// either type parameters and "(" (4), or a property whose value is an
	// (async, 5) function: "= function (" (6), "= (" (7, an arrow if =>
	// follows) or "= x =>" (8).
	jsMember = lazyRegexp(`\A(?:@[\w$.]+(?:\([^()]*\))?\s*)*` +
		`((?:(?:public|private|protected|static|readonly|abstract|override|declare|accessor|async|get|set)\s+)*)(\*\s*)?` +
		`(#?[\w$]+|\[[^\]\n]*\]|'[^'\n]*'|"[^"\n]*")\s*[?!]?\s*` +
		`(?:(?:<(?:[^<>]|<[^<>]*>)*>\s*)?(\()|(?::[^=;\n]+)?=\s*(async\s+)?(?:(function\b\s*\*?\s*[\w$]*\s*\()|(\()|([\w$]+)\s*=>))`)
	jsArrowTail = lazyRegexp(`\A\s*(?::[^=;{\n]+)?=>`)
)

func scanJS(src []byte) *Symbols {
	code := blankComments(src, true)
	var exports exportSet
	imports, funcs, types := []Import{}, []Function{}, []TypeDecl{}
	at := func(off int) int { return lineAt(code, off) }
	text := string(code)

	for _, m := range jsImport().FindAllStringSubmatchIndex(text, -1) {
		imports = append(imports, Import{From: text[m[6]:m[7]], Items: importClause(text[m[4]:m[5]]),
			Line: at(m[0]), TypeOnly: m[2] >= 0, Kind: "import"})
	}
	for _, m := range jsImportBare().FindAllStringSubmatchIndex(text, -1) {
		imports = append(imports, Import{From: text[m[2]:m[3]], Items: []string{}, Line: at(m[0]), Kind: "import"})
	}
	for _, m := range jsRequire().FindAllStringSubmatchIndex(text, -1) {
		items := []string{}
		if m[2] >= 0 {
			items = importClause(text[m[2]:m[3]])
		}
		imports = append(imports, Import{From: text[m[4]:m[5]], Items: items, Line: at(m[0]), Kind: "require"})
	}
	for _, m := range jsExportFrom().FindAllStringSubmatchIndex(text, -1) {
		clause := text[m[4]:m[5]]
		items := []string{}
		if strings.HasPrefix(clause, "*") {
			items = append(items, strings.Join(strings.Fields(clause), " "))
			if _, ns, ok := strings.Cut(clause, " as "); ok {
				exports.add(strings.TrimSpace(ns), at(m[0]))
			}
		} else {
			for _, it := range splitList(strings.Trim(clause, "{}")) {
				items = append(items, exportedName(it))
				exports.add(exportedName(it), at(m[0]))
			}
		}
		imports = append(imports, Import{From: text[m[6]:m[7]], Items: items, Line: at(m[0]), TypeOnly: m[2] >= 0, Kind: "re-export"})
	}
	for _, m := range jsExportStar().FindAllStringSubmatchIndex(text, -1) {
		imports = append(imports, Import{From: text[m[2]:m[3]], Items: []string{"*"}, Line: at(m[0]), Kind: "re-export"})
	}
	for _, m := range jsExportList().FindAllStringSubmatchIndex(text, -1) {
		if jsAfterExports().MatchString(text[m[1]:]) {
			continue // a re-export, handled above
		}
		for _, it := range splitList(text[m[2]:m[3]]) {
			exports.add(exportedName(it), at(m[0]))
		}
	}
	for _, m := range jsExportDecl().FindAllStringSubmatchIndex(text, -1) {
		exports.add(text[m[2]:m[3]], at(m[0]))
	}
	if loc := jsExportDef().FindStringIndex(text); loc != nil {
		exports.add("default", at(loc[0]))
	}
	for _, m := range jsModuleObj().FindAllStringSubmatchIndex(text, -1) {
		v := text[m[2]:m[3]]
		if strings.HasPrefix(v, "{") {
			for _, it := range splitList(strings.Trim(v, "{}")) {
				name, _, _ := strings.Cut(it, ":")
				exports.add(strings.TrimSpace(name), at(m[0]))
			}
		} else {
			exports.add("default", at(m[0]))
		}
	}
	for _, m := range jsExportsProp().FindAllStringSubmatchIndex(text, -1) {
		if m[1] < len(text) && text[m[1]] == '=' {
			continue // a comparison: exports.a == b
		}
		name := m[2:4]
		if name[0] < 0 {
			name = m[4:6]
		}
		exports.add(text[name[0]:name[1]], at(name[0]))
	}
	for _, m := range jsDefineExport().FindAllStringSubmatchIndex(text, -1) {
		if name := text[m[2]:m[3]]; name != "__esModule" { // a marker, not enumerable
			exports.add(name, at(m[0]))
		}
	}
	for _, m := range jsFunction().FindAllStringSubmatchIndex(text, -1) {
		funcs = append(funcs, Function{Name: text[m[2]:m[3]], Line: at(m[0]), Params: splitList(text[m[4]:m[5]])})
	}
	for _, m := range jsArrow().FindAllStringSubmatchIndex(text, -1) {
		params := []string{}
		for g := 4; g <= 8; g += 2 {
			if m[g] >= 0 {
				params = splitList(text[m[g]:m[g+1]])
			}
		}
		funcs = append(funcs, Function{Name: text[m[2]:m[3]], Line: at(m[0]), Params: params})
	}
	for _, m := range jsTypeDecl().FindAllStringSubmatchIndex(text, -1) {
		kind, name := text[m[2]:m[3]], text[m[4]:m[5]]
		if name == "extends" || name == "implements" {
			continue // an anonymous class
		}
		if strings.HasPrefix(kind, "const") {
			kind = "enum"
		}
		types = append(types, TypeDecl{Name: name, Kind: kind, Line: at(m[0])})
		if kind == "class" {
			funcs = append(funcs, jsMethods(text, name, m[1], at)...)
		}
	}
	for _, m := range jsTypeAlias().FindAllStringSubmatchIndex(text, -1) {
		if typeAliasBody(text, m[1]) {
			types = append(types, TypeDecl{Name: text[m[2]:m[3]], Kind: "type", Line: at(m[0])})
		}
	}
	sortByLine(funcs, func(f Function) int { return f.Line })
	sortByLine(imports, func(i Import) int { return i.Line })
	sortByLine(types, func(t TypeDecl) int { return t.Line })
	syms := &Symbols{Imports: &imports, Functions: &funcs, Types: &types}
	exports.into(syms)
	return syms
}

// typeAliasBody reports whether the alias head ending at text[i] goes on
// to "=": after its type parameters, if any, which are skipped bracket by
// bracket (defaults hold "=", "<…>" and the ">" of an arrow's "=>").
func typeAliasBody(text string, i int) bool {
	if i < len(text) && text[i] == '<' {
		depth := 0
	params:
		for ; i < len(text); i++ {
			switch c := text[i]; {
			case c == '"' || c == '\'' || c == '`':
				i = skipQuoted(text, i)
			case c == '<' || c == '(' || c == '[' || c == '{':
				depth++
			case c == '>' && text[i-1] == '=': // an arrow, not a bracket
			case c == '>' || c == ')' || c == ']' || c == '}':
				if depth--; depth == 0 {
					i++
					break params
				}
			case c == ';':
				return false
			}
		}
	}
	for i < len(text) && isSpace(text[i]) {
		i++
	}
	return i < len(text) && text[i] == '=' && (i+1 == len(text) || text[i+1] != '=')
}

// jsMethods lists the methods of the class whose head ends at text[from:],
// as Class.name: those with a body, abstract ones and overload signatures
// (the first of a name), and properties holding a function. The body is
// walked bracket by bracket, skipping strings, and a member may start at
// its top level after "{", ";", "}" or a line break (members need no ";").
// A regex literal with an unbalanced bracket can throw it off: the
// scanners are line-exact, not a full parser.
func jsMethods(text, class string, from int, at func(int) int) []Function {
	open := jsClassBody(text, from)
	if open < 0 {
		return nil
	}
	var methods []Function
	seen := map[string]bool{}
	depth, memberStart := 0, true
	for i := open + 1; i < len(text); i++ {
		c := text[i]
		if depth == 0 && memberStart && !isSpace(c) {
			memberStart = false
			if f, next, ok := jsMethod(text, i, class); ok {
				if key := f.Name + " " + strings.Join(f.Modifiers, " "); !seen[key] {
					seen[key] = true
					f.Line = at(f.Line)
					methods = append(methods, f)
				}
				i = next - 1 // resume at the parameters' "(" or after "=>"
				continue
			}
		}
		switch c {
		case '"', '\'', '`':
			i = skipQuoted(text, i)
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth == 0 {
				return methods // the class body's "}"
			}
			depth--
			memberStart = depth == 0 && c == '}'
		case ';', '\n':
			memberStart = memberStart || depth == 0
		}
	}
	return methods
}

// jsMethod reads the member starting at text[i] if it is a method, returning
// it with Line holding the offset of its modifiers or name, and where to
// resume scanning.
func jsMethod(text string, i int, class string) (f Function, next int, ok bool) {
	m := jsMember().FindStringSubmatchIndex(text[i:])
	if m == nil {
		return f, 0, false
	}
	f = Function{Name: class + "." + text[i+m[6]:i+m[7]], Line: i + m[2], Params: []string{}, Modifiers: strings.Fields(text[i+m[2] : i+m[3]])}
	if m[10] >= 0 {
		f.Modifiers = append(f.Modifiers, "async")
	}
	if m[16] >= 0 { // x = y => …
		f.Params = []string{text[i+m[16] : i+m[17]]}
		return f, i + m[1], true
	}
	paren := i + m[1] - 1
	end := closingParen(text, paren)
	if end < 0 {
		return f, 0, false
	}
	if m[14] >= 0 && !jsArrowTail().MatchString(text[end+1:]) {
		return f, 0, false // x = (a + b): a value, not a function
	}
	f.Params = splitList(text[paren+1 : end])
	return f, paren, true
}

// jsClassBody finds the "{" opening a class body after its head (extends
// and implements clauses, type arguments), or -1.
func jsClassBody(text string, from int) int {
	depth := 0
	for i := from; i < len(text); i++ {
		switch text[i] {
		case '(', '[', '<':
			depth++
		case ')', ']', '>':
			depth = max(depth-1, 0)
		case '{':
			if depth == 0 {
				return i
			}
		case ';':
			return -1
		}
	}
	return -1
}

// closingParen finds the ")" matching the "(" at text[open], skipping
// strings and nested brackets, or -1.
func closingParen(text string, open int) int {
	depth := 0
	for i := open; i < len(text); i++ {
		switch text[i] {
		case '"', '\'', '`':
			i = skipQuoted(text, i)
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return -1
}

// skipQuoted returns the index of the quote closing the string that opens
// at text[i] (the end of the text if none; a line break ends a ' or "
// string, as blankComments has it).
func skipQuoted(text string, i int) int {
	quote := text[i]
	for i++; i < len(text); i++ {
		switch c := text[i]; {
		case c == '\\':
			i++
		case c == quote || (c == '\n' && quote != '`'):
			return i
		}
	}
	return len(text)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// importClause lists the names an import or require binds: the default
// name, "* as ns", and each named import (type-only markers dropped).
func importClause(clause string) []string {
	items := []string{}
	clause = strings.TrimSpace(clause)
	if open := strings.IndexByte(clause, '{'); open >= 0 {
		close := strings.LastIndexByte(clause, '}')
		if close < open {
			close = len(clause)
		}
		for _, it := range splitList(clause[open+1 : close]) {
			it = strings.TrimPrefix(it, "type ")
			name, _, _ := strings.Cut(it, ":") // require destructuring: { a: b }
			name, _, _ = strings.Cut(name, " as ")
			items = append(items, strings.TrimSpace(name))
		}
		clause = clause[:open] + clause[min(close+1, len(clause)):]
	}
	for _, it := range splitList(clause) {
		items = append(items, it)
	}
	return items
}

// exportedName is the public name of "a" or "a as b".
func exportedName(item string) string {
	item = strings.TrimPrefix(item, "type ")
	if _, as, ok := strings.Cut(item, " as "); ok {
		return strings.TrimSpace(as)
	}
	return strings.TrimSpace(item)
}

// blankComments replaces comments with spaces, keeping newlines so offsets
// and lines stay right. Strings are kept; with backticks, template literals
// too. (A regex literal containing quotes can confuse it; the scanners are
// line-exact, not a full parser.)
func blankComments(src []byte, backticks bool) []byte {
	out := []byte(string(src))
	var quote byte
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote || (c == '\n' && quote != '`') {
				quote = 0
			}
		case c == '"' || c == '\'' || (c == '`' && backticks):
			quote = c
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := strings.Index(string(out[i+2:]), "*/")
			stop := len(out)
			if end >= 0 {
				stop = i + 2 + end + 2
			}
			for ; i < stop; i++ {
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
			i--
		}
	}
	return out
}

func sortByLine[T any](items []T, line func(T) int) {
	slices.SortStableFunc(items, func(a, b T) int { return line(a) - line(b) })
}

func dedupe(items []string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, it := range items {
		if it != "" && !seen[it] {
			seen[it] = true
			out = append(out, it)
		}
	}
	return out
}
