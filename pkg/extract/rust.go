package extract

import (
	"strings"
)

var (
	rsUse  = lazyRegexp(`(?m)^[ \t]*(pub(?:\([^)]*\))?[ \t]+)?use[ \t]+([^;]+);`)
	rsMod  = lazyRegexp(`(?m)^[ \t]*(pub(?:\([^)]*\))?[ \t]+)?mod[ \t]+(\w+)[ \t]*;`)
	rsFn   = lazyRegexp(`(?m)^[ \t]*(pub(?:\([^)]*\))?[ \t]+)?(?:const[ \t]+)?(?:async[ \t]+)?(?:unsafe[ \t]+)?(?:extern[ \t]+"[^"]*"[ \t]+)?fn[ \t]+(\w+)[ \t]*(?:<[^(]*>)?[ \t]*\(([^)]*)\)`)
	rsType = lazyRegexp(`(?m)^[ \t]*(pub(?:\([^)]*\))?[ \t]+)?(struct|enum|trait|type|union)[ \t]+(\w+)`)
	rsItem = lazyRegexp(`(?m)^[ \t]*pub[ \t]+(?:const|static|mod)[ \t]+(\w+)`)
)

// scanRust reads a Rust file. Exports are its pub items (pub(crate) and
// other restricted visibilities excluded); `mod x;` counts as an import of
// the file that holds x.
func scanRust(src []byte) *Symbols {
	code := blankComments(src, false)
	text := string(code)
	at := func(off int) int { return lineAt(code, off) }
	var exports exportSet
	imports, funcs, types := []Import{}, []Function{}, []TypeDecl{}
	public := func(m []int) bool { return m[2] >= 0 && strings.TrimSpace(text[m[2]:m[3]]) == "pub" }

	for _, m := range rsUse().FindAllStringSubmatchIndex(text, -1) {
		path := strings.Join(strings.Fields(text[m[4]:m[5]]), "")
		from, items := path, []string{}
		if open := strings.IndexByte(path, '{'); open >= 0 {
			from = strings.TrimSuffix(path[:open], "::")
			items = splitList(strings.Trim(path[open:], "{}"))
		} else if i := strings.LastIndex(path, "::"); i >= 0 {
			from, items = path[:i], []string{path[i+2:]}
		}
		kind := "use"
		if public(m) {
			kind = "re-export"
			for _, it := range items {
				if _, as, ok := strings.Cut(it, " as "); ok {
					it = as
				}
				if it != "*" && it != "self" {
					exports.add(it, at(m[0]))
				}
			}
		}
		imports = append(imports, Import{From: from, Items: items, Line: at(m[0]), Kind: kind})
	}
	for _, m := range rsMod().FindAllStringSubmatchIndex(text, -1) {
		imports = append(imports, Import{From: text[m[4]:m[5]], Items: []string{}, Line: at(m[0]), Kind: "mod"})
	}
	for _, m := range rsFn().FindAllStringSubmatchIndex(text, -1) {
		name := text[m[4]:m[5]]
		funcs = append(funcs, Function{Name: name, Line: at(m[0]), Params: splitList(text[m[6]:m[7]])})
		if public(m) {
			exports.add(name, at(m[0]))
		}
	}
	for _, m := range rsType().FindAllStringSubmatchIndex(text, -1) {
		name := text[m[6]:m[7]]
		types = append(types, TypeDecl{Name: name, Kind: text[m[4]:m[5]], Line: at(m[0])})
		if public(m) {
			exports.add(name, at(m[0]))
		}
	}
	for _, m := range rsItem().FindAllStringSubmatchIndex(text, -1) {
		exports.add(text[m[2]:m[3]], at(m[0]))
	}
	sortByLine(imports, func(i Import) int { return i.Line })
	s := &Symbols{Imports: &imports, Functions: &funcs, Types: &types}
	exports.into(s)
	return s
}
