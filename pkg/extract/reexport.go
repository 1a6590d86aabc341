package extract

import "lmtool.dev/lm/pkg/confine"

// ScanFile reads the symbols of the code file at path as [Scan] does, then
// adds the names it re-exports wholesale — `export * from "./x"`, or
// TypeScript's CommonJS __exportStar(require("./x"), exports) — from files
// inside the root: each target's exports but default (which a star never
// re-exports), its own stars followed in turn, each file once. Such names
// are cited at the line of the star. A target outside the root, missing or
// unreadable adds nothing; packages are not followed. It reports whether
// any star was followed: the answer then depends on other files too.
func ScanFile(r *confine.Root, path string, content []byte) (*Symbols, bool, error) {
	lang := LanguageOf(path)
	s, err := Scan(lang, content)
	if err != nil || (lang != "javascript" && lang != "typescript") {
		return s, false, err
	}
	stars := starReexports(s)
	if len(stars) == 0 {
		return s, false, nil
	}
	set := exportSet{names: append([]string(nil), *s.Exports...), lines: map[string]int{}}
	for name, line := range s.exportLines {
		set.lines[name] = line
	}
	seen := map[string]bool{path: true}
	var follow func(from string, star Import, line int)
	follow = func(from string, star Import, line int) {
		targets, _ := resolveImport(r, "", LanguageOf(from), from, star)
		for _, target := range targets {
			lang := LanguageOf(target)
			if seen[target] || lang == "" {
				continue
			}
			seen[target] = true
			rel, err := r.Resolve(target)
			if err != nil {
				continue
			}
			content, _, ok := readFile(r, rel, DefaultMaxFileBytes, nil)
			if !ok {
				continue
			}
			ts, err := Scan(lang, content)
			if err != nil {
				continue
			}
			for _, name := range *ts.Exports {
				if name != "default" {
					set.add(name, line)
				}
			}
			for _, next := range starReexports(ts) {
				follow(target, next, line)
			}
		}
	}
	for _, star := range stars {
		follow(path, star, star.Line)
	}
	set.into(s)
	return s, true, nil
}

// starReexports are a module's `export * from` imports of relative paths.
func starReexports(s *Symbols) []Import {
	var stars []Import
	for _, im := range *s.Imports {
		if im.Kind == "re-export" && len(im.Items) == 1 && im.Items[0] == "*" && len(im.From) > 0 && im.From[0] == '.' {
			stars = append(stars, im)
		}
	}
	return stars
}
