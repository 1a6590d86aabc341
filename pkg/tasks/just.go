package tasks

import (
	"regexp"
	"strings"
)

// justfileNames are the names just looks for.
var justfileNames = []string{"justfile", "Justfile", ".justfile", "JUSTFILE"}

// findJust reads the justfile's public recipes.
func findJust(f files) ([]Task, error) {
	dir := f.dir
	path := f.firstExisting(dir, justfileNames...)
	if path == "" {
		return nil, nil
	}
	data, err := f.readFile(path)
	if err != nil {
		return nil, parseErr(path, err)
	}
	var tasks []Task
	for _, r := range parseJustfile(string(data)) {
		tasks = append(tasks, newTask("just", r.name, path, r.doc, "just", r.name))
	}
	return tasks, nil
}

type justRecipe struct{ name, doc string }

var (
	justName    = regexp.MustCompile(`^@?([A-Za-z_][A-Za-z0-9_-]*)`)
	justDocAttr = regexp.MustCompile(`doc\(\s*(?:'([^']*)'|"((?:[^"\\]|\\.)*)")\s*\)`)
)

// parseJustfile finds recipe headers in every form just accepts: with
// parameters (`name p="x" *rest:`), dependency lists (`name: a b`),
// attributes (`[private]`, `[doc('…')]`, `[group('…')]`) and doc comments
// on the line above. Private recipes (`_name` or [private]) are left out,
// as `just --list` leaves them out.
func parseJustfile(text string) []justRecipe {
	var recipes []justRecipe
	var comment, docAttr string
	private := false
	reset := func() { comment, docAttr, private = "", "", false }
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if line == "" {
			reset()
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue // a recipe body or a continuation
		}
		if strings.HasPrefix(line, "#") {
			if !strings.HasPrefix(line, "#!") {
				comment = strings.TrimSpace(strings.TrimPrefix(line, "#"))
			}
			continue
		}
		if strings.HasPrefix(line, "[") {
			attrs := strings.Trim(strings.TrimSpace(line), "[]")
			if m := justDocAttr.FindStringSubmatch(attrs); m != nil {
				docAttr = m[1] + m[2]
			}
			for _, a := range strings.Split(attrs, ",") {
				if strings.TrimSpace(a) == "private" {
					private = true
				}
			}
			continue
		}
		m := justName.FindStringSubmatch(line)
		if m == nil {
			reset()
			continue
		}
		name, rest := m[1], line[len(m[0]):]
		if isRecipeHeader(name, rest) && !private && !strings.HasPrefix(name, "_") {
			doc := docAttr
			if doc == "" {
				doc = comment
			}
			recipes = append(recipes, justRecipe{name: name, doc: doc})
		}
		reset()
	}
	return recipes
}

// isRecipeHeader tells a recipe header from assignments, settings, aliases,
// imports and modules: it has a colon, outside quotes, backticks and
// parentheses, that is not the start of :=.
func isRecipeHeader(name, rest string) bool {
	trimmed := strings.TrimLeft(rest, " \t")
	if strings.HasPrefix(trimmed, ":=") {
		return false
	}
	switch name {
	case "alias", "set", "export", "import", "mod", "unexport":
		if len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') && !strings.HasPrefix(trimmed, ":") {
			return false
		}
	}
	var quote byte
	depth := 0
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == '#' && depth == 0:
			return false
		case c == ':' && depth == 0:
			return i+1 >= len(rest) || rest[i+1] != '='
		case c == '=' && depth == 0 && i+1 < len(rest) && rest[i+1] == '=':
			return false
		}
	}
	return false
}
