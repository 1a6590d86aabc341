package extract

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Symbols is what a code file declares and uses. Which lists are present
// depends on the task (structure: all).
type Symbols struct {
	Exports   *[]string   `json:"exports,omitempty"`
	Imports   *[]Import   `json:"imports,omitempty"`
	Functions *[]Function `json:"functions,omitempty"`
	Types     *[]TypeDecl `json:"types,omitempty"`

	// exportLines holds the line declaring (or listing for export) each
	// export, for evidence; it is not part of the answer.
	exportLines map[string]int
}

// ExportLine is the line that declares or lists name for export, 0 when
// the scanner does not know it (a result read back from the cache).
func (s *Symbols) ExportLine(name string) int { return s.exportLines[name] }

// exportSet collects a file's exports in the order they are found, each
// once, with the first line that declares or lists it.
type exportSet struct {
	names []string
	lines map[string]int
}

func (e *exportSet) add(name string, line int) {
	if name == "" {
		return
	}
	if e.lines == nil {
		e.lines = map[string]int{}
	}
	if _, seen := e.lines[name]; !seen {
		e.lines[name] = line
		e.names = append(e.names, name)
	}
}

// into stores the set in s.
func (e *exportSet) into(s *Symbols) {
	names := e.names
	if names == nil {
		names = []string{}
	}
	s.Exports, s.exportLines = &names, e.lines
}

// Import is one import statement.
type Import struct {
	From     string   `json:"from" jsonschema:"the module, package or path imported"`
	Items    []string `json:"items" jsonschema:"names bound: imported names, default, * as ns, aliases"`
	Line     int      `json:"line"`
	TypeOnly bool     `json:"type_only,omitempty" jsonschema:"TypeScript import type"`
	Kind     string   `json:"kind,omitempty" jsonschema:"import, require, re-export, use or mod"`
}

// Function is a function or method declaration.
type Function struct {
	Name      string   `json:"name" jsonschema:"methods as Receiver.name (a class, struct or type)"`
	Line      int      `json:"line"`
	Params    []string `json:"params"`
	Modifiers []string `json:"modifiers,omitempty" jsonschema:"JavaScript/TypeScript methods: static, async, get, set, private, abstract… as written"`
}

// TypeDecl is a type declaration.
type TypeDecl struct {
	Name string `json:"name"`
	Kind string `json:"kind" jsonschema:"interface, type, enum, struct, class, trait or alias"`
	Line int    `json:"line"`
}

// languages maps file extensions to the scanners' language names.
var languages = map[string]string{
	".go": "go",
	".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
	".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "typescript",
	".py": "python", ".pyi": "python",
	".rs": "rust",
}

// LanguageOf names a file's language from its extension, "" if unsupported.
func LanguageOf(path string) string {
	return languages[strings.ToLower(filepath.Ext(path))]
}

// Scan reads a code file's symbols.
func Scan(lang string, src []byte) (*Symbols, error) {
	var s *Symbols
	var err error
	switch lang {
	case "go":
		s, err = scanGo(src)
	case "javascript", "typescript":
		s = scanJS(src)
	case "python":
		s = scanPython(src)
	case "rust":
		s = scanRust(src)
	default:
		return nil, fmt.Errorf("unsupported language %q", lang)
	}
	if err != nil {
		return nil, err
	}
	s.fill()
	return s, nil
}

// fill makes every list present, so "none" reads as [] rather than absent.
func (s *Symbols) fill() {
	if s.Exports == nil {
		s.Exports = &[]string{}
	}
	if s.Imports == nil {
		s.Imports = &[]Import{}
	}
	if s.Functions == nil {
		s.Functions = &[]Function{}
	}
	if s.Types == nil {
		s.Types = &[]TypeDecl{}
	}
}

// Only keeps the list a task asks for (all of them for structure).
func (s *Symbols) Only(task string) *Symbols {
	switch task {
	case "exports":
		return &Symbols{Exports: s.Exports}
	case "imports":
		return &Symbols{Imports: s.Imports}
	case "functions":
		return &Symbols{Functions: s.Functions}
	case "types":
		return &Symbols{Types: s.Types}
	}
	return s
}

// names is the task's list as names: exports, the modules imported, the
// functions' and the types' names.
func (s *Symbols) names(task string) []string {
	out := []string{}
	switch task {
	case "exports":
		out = append(out, *s.Exports...)
	case "imports":
		for _, im := range *s.Imports {
			out = append(out, im.From)
		}
	case "functions":
		for _, f := range *s.Functions {
			out = append(out, f.Name)
		}
	case "types":
		for _, t := range *s.Types {
			out = append(out, t.Name)
		}
	}
	return out
}

// lineAt is the 1-based line of offset off in src.
func lineAt(src []byte, off int) int {
	return 1 + strings.Count(string(src[:off]), "\n")
}

// splitList splits a comma-separated list, trimming spaces and dropping
// empty items.
func splitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.Join(strings.Fields(p), " "); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// lazyRegexp compiles a pattern on first use: the scanners' patterns would
// otherwise be compiled at every lm start, whatever the command.
func lazyRegexp(src string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(src) })
}
