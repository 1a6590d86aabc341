package tasks

import (
	"path/filepath"
	"strings"
)

// findMake reads the makefile GNU make would use (GNUmakefile, makefile,
// Makefile) and the files it includes. Targets with % or starting with . or
// _ are skipped; "## text" after the prerequisites, or on the line above,
// is the description.
func findMake(f files) ([]Task, error) {
	dir := f.dir
	path := f.firstExisting(dir, "GNUmakefile", "makefile", "Makefile")
	if path == "" {
		return nil, nil
	}
	m := &makeReader{f: f, seen: map[string]bool{}, index: map[string]int{}}
	err := m.read(path)
	return m.tasks, err
}

type makeReader struct {
	f     files
	seen  map[string]bool
	index map[string]int // target → position in tasks
	tasks []Task
}

func (m *makeReader) read(path string) error {
	if m.seen[path] {
		return nil
	}
	m.seen[path] = true
	data, err := m.f.readFile(path)
	if err != nil {
		return parseErr(path, err)
	}
	targets, includes := parseMakefile(string(data))
	for _, t := range targets {
		if i, ok := m.index[t.name]; ok {
			if m.tasks[i].Description == "" {
				m.tasks[i].Description = t.help
			}
			continue
		}
		m.index[t.name] = len(m.tasks)
		m.tasks = append(m.tasks, newTask("make", t.name, path, t.help, "make", t.name))
	}
	for _, inc := range includes {
		// GNU make resolves include paths against its working directory.
		pattern := inc
		if !filepath.IsAbs(pattern) {
			pattern = filepath.Join(m.f.dir, pattern)
		}
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if err := m.read(f); err != nil {
				return err
			}
		}
	}
	return nil
}

type makeTarget struct{ name, help string }

// parseMakefile finds rule targets and include directives. It is a line
// reader, not an evaluator: variables are not expanded, so targets and
// includes that use them are left out.
func parseMakefile(text string) (targets []makeTarget, includes []string) {
	lines := joinContinuations(strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n"))
	var pendingHelp string
	inDefine := false
	for _, line := range lines {
		if strings.HasPrefix(line, "\t") {
			continue // recipe
		}
		trimmed := strings.TrimSpace(line)
		if inDefine {
			if trimmed == "endef" {
				inDefine = false
			}
			continue
		}
		if strings.HasPrefix(trimmed, "##") {
			pendingHelp = strings.TrimSpace(strings.TrimLeft(trimmed, "#"))
			continue
		}
		help := pendingHelp
		pendingHelp = ""
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		word, rest, _ := strings.Cut(trimmed, " ")
		switch word {
		case "define":
			inDefine = true
			continue
		case "include", "-include", "sinclude":
			for _, f := range strings.Fields(stripComment(rest)) {
				if !strings.Contains(f, "$") {
					includes = append(includes, f)
				}
			}
			continue
		case "export", "override", "unexport", "ifeq", "ifneq", "ifdef", "ifndef", "else", "endif", "vpath":
			continue
		}
		colon := ruleColon(line)
		if colon < 0 {
			continue
		}
		after := line[colon+1:]
		if strings.HasPrefix(after, "=") || strings.HasPrefix(after, ":=") || strings.HasPrefix(after, ":::=") {
			continue // an assignment, not a rule
		}
		if i := strings.Index(after, "##"); i >= 0 {
			help = strings.TrimSpace(after[i+2:])
		}
		for _, name := range strings.Fields(line[:colon]) {
			if strings.ContainsAny(name, "%$") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				continue
			}
			targets = append(targets, makeTarget{name: name, help: help})
		}
	}
	return targets, includes
}

// ruleColon is the index of the colon that ends a rule's target list, or
// -1 when the line is an assignment or has none.
func ruleColon(line string) int {
	depth := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '(', '{':
			depth++
		case ')', '}':
			depth--
		case '=', '#':
			if depth == 0 {
				return -1
			}
		case ':':
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func stripComment(s string) string {
	if i := strings.Index(s, "#"); i >= 0 {
		return s[:i]
	}
	return s
}

// joinContinuations merges lines ending in a backslash with the next.
func joinContinuations(lines []string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range lines {
		if strings.HasSuffix(l, "\\") {
			cur.WriteString(strings.TrimSuffix(l, "\\"))
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(l)
		out = append(out, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}
