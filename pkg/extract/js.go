package extract

import (
	"slices"
	"strings"
)

// The JavaScript/TypeScript scanner works on the source with comments
// blanked out (strings and template literals kept), so multi-line import
// lists and declarations are matched as text with their offsets.
var (
	jsImport       = lazyRegexp(`(?m)^[ \t]*import\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"\n]+)['"]`)
	jsImportBare   = lazyRegexp(`(?m)^[ \t]*import\s*['"]([^'"\n]+)['"]`)
	jsRequire      = lazyRegexp(`(?:(?:const|let|var)\s+(\{[^}]*\}|[\w$]+)\s*=\s*)?\brequire\(\s*['"]([^'"\n]+)['"]\s*\)`)
	jsExportFrom   = lazyRegexp(`(?m)^[ \t]*export\s+(type\s+)?(\*(?:\s+as\s+[\w$]+)?|\{[^}]*\})\s*from\s*['"]([^'"\n]+)['"]`)
	jsExportList   = lazyRegexp(`(?m)^[ \t]*export\s+(?:type\s+)?\{([^}]*)\}`)
	jsExportDecl   = lazyRegexp(`(?m)^[ \t]*export\s+(?:declare\s+)?(?:async\s+)?(?:abstract\s+)?(?:function\s*\*?|class|const\s+enum|const|let|var|interface|type|enum|namespace)\s+([\w$]+)`)
	jsExportDef    = lazyRegexp(`(?m)^[ \t]*export\s+default\b`)
	jsModuleObj    = lazyRegexp(`(?m)^[ \t]*module\.exports\s*=\s*(\{[^}]*\}|[\w$]*)`)
	jsExportsProp  = lazyRegexp(`(?m)^[ \t]*(?:module\.)?exports\.([\w$]+)\s*=`)
	jsFunction     = lazyRegexp(`(?m)^[ \t]*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:async\s+)?function\s*\*?\s*([\w$]+)\s*(?:<[^>(]*>)?\s*\(([^)]*)\)`)
	jsArrow        = lazyRegexp(`(?m)^[ \t]*(?:export\s+)?(?:const|let|var)\s+([\w$]+)\s*(?::[^=\n]+)?=\s*(?:async\s+)?(?:function\s*\*?\s*[\w$]*\s*\(([^)]*)\)|\(([^)]*)\)\s*(?::[^=\n]+)?=>|([\w$]+)\s*=>)`)
	jsTypeDecl     = lazyRegexp(`(?m)^[ \t]*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:abstract\s+)?(interface|enum|class|const\s+enum)\s+([\w$]+)`)
	jsTypeAlias    = lazyRegexp(`(?m)^[ \t]*(?:export\s+)?(?:declare\s+)?type\s+([\w$]+)\s*(?:<[^=]*>)?\s*=`)
	jsAfterExports = lazyRegexp(`^\s*from\b`)
)

func scanJS(src []byte) *Symbols {
	code := blankComments(src, true)
	exports, imports, funcs, types := []string{}, []Import{}, []Function{}, []TypeDecl{}
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
				exports = append(exports, strings.TrimSpace(ns))
			}
		} else {
			for _, it := range splitList(strings.Trim(clause, "{}")) {
				items = append(items, exportedName(it))
				exports = append(exports, exportedName(it))
			}
		}
		imports = append(imports, Import{From: text[m[6]:m[7]], Items: items, Line: at(m[0]), TypeOnly: m[2] >= 0, Kind: "re-export"})
	}
	for _, m := range jsExportList().FindAllStringSubmatchIndex(text, -1) {
		if jsAfterExports().MatchString(text[m[1]:]) {
			continue // a re-export, handled above
		}
		for _, it := range splitList(text[m[2]:m[3]]) {
			exports = append(exports, exportedName(it))
		}
	}
	for _, m := range jsExportDecl().FindAllStringSubmatchIndex(text, -1) {
		exports = append(exports, text[m[2]:m[3]])
	}
	if jsExportDef().MatchString(text) {
		exports = append(exports, "default")
	}
	for _, m := range jsModuleObj().FindAllStringSubmatchIndex(text, -1) {
		v := text[m[2]:m[3]]
		if strings.HasPrefix(v, "{") {
			for _, it := range splitList(strings.Trim(v, "{}")) {
				name, _, _ := strings.Cut(it, ":")
				exports = append(exports, strings.TrimSpace(name))
			}
		} else {
			exports = append(exports, "default")
		}
	}
	for _, m := range jsExportsProp().FindAllStringSubmatchIndex(text, -1) {
		exports = append(exports, text[m[2]:m[3]])
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
	}
	for _, m := range jsTypeAlias().FindAllStringSubmatchIndex(text, -1) {
		types = append(types, TypeDecl{Name: text[m[2]:m[3]], Kind: "type", Line: at(m[0])})
	}
	sortByLine(funcs, func(f Function) int { return f.Line })
	sortByLine(imports, func(i Import) int { return i.Line })
	sortByLine(types, func(t TypeDecl) int { return t.Line })
	exports = dedupe(exports)
	return &Symbols{Exports: &exports, Imports: &imports, Functions: &funcs, Types: &types}
}

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
