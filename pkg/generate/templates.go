package generate

import (
	"embed"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"lmtool.dev/lm/pkg/op"
)

//go:embed templates/*.md
var builtins embed.FS

// Source is where a named template lives.
type Source struct {
	Name string `json:"name"`
	// Origin is project (.lm/templates of the root), home
	// ($LM_HOME/templates) or builtin; the first of these that has a name
	// wins, so a project can override a user's template and both can
	// override a built-in.
	Origin string `json:"origin"`
	Path   string `json:"path,omitempty" jsonschema:"the file (none for built-ins)"`
	load   func() ([]byte, error)
}

// names are template names: a file's name up to its first dot.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// maxTemplateBytes bounds a template file.
const maxTemplateBytes = 1 << 20

// catalog finds named templates in their directories and the built-ins.
type catalog struct {
	dirs []struct{ origin, dir string }
}

func newCatalog(root, home string) catalog {
	var c catalog
	seen := map[string]bool{}
	for _, d := range []struct{ origin, dir string }{
		{"project", filepath.Join(root, ".lm", "templates")},
		{"home", filepath.Join(home, "templates")},
	} {
		if d.dir == "" || home == "" && d.origin == "home" {
			continue
		}
		real, err := filepath.EvalSymlinks(d.dir)
		if err != nil || seen[real] { // missing, or the same directory twice (LM_HOME inside the project)
			continue
		}
		seen[real] = true
		c.dirs = append(c.dirs, d)
	}
	return c
}

// All lists every template by name, the winning source of each name.
func (c catalog) All() ([]Source, error) {
	byName := map[string]Source{}
	add := func(s Source) {
		if _, ok := byName[s.Name]; !ok {
			byName[s.Name] = s
		}
	}
	for _, d := range c.dirs {
		entries, err := os.ReadDir(d.dir)
		if err != nil {
			return nil, op.Errorf(op.KindInvalid, "read templates in %s: %v", d.dir, err)
		}
		for _, e := range entries {
			name, _, _ := strings.Cut(e.Name(), ".")
			if e.IsDir() || !validName.MatchString(name) {
				continue
			}
			add(fileSource(name, d.origin, filepath.Join(d.dir, e.Name())))
		}
	}
	entries, _ := builtins.ReadDir("templates")
	for _, e := range entries {
		file := "templates/" + e.Name()
		add(Source{Name: strings.TrimSuffix(e.Name(), ".md"), Origin: "builtin",
			load: func() ([]byte, error) { return builtins.ReadFile(file) }})
	}
	out := make([]Source, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Find returns the template of that name, or a not-found error listing the
// names there are.
func (c catalog) Find(name string) (Source, error) {
	all, err := c.All()
	if err != nil {
		return Source{}, err
	}
	var names []string
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Source{}, op.Errorf(op.KindNotFound, "no template named %q", name).WithCategory("template_not_found").
		WithHint("templates: %s (lm generate list shows them with their variables)", strings.Join(names, ", "))
}

func fileSource(name, origin, path string) Source {
	return Source{Name: name, Origin: origin, Path: path, load: func() ([]byte, error) { return readTemplate(path) }}
}

// readTemplate reads a template file, refusing what cannot be a template.
func readTemplate(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, op.Errorf(op.KindNotFound, "template file %s does not exist", path).WithCategory("file_not_found")
	}
	if err != nil {
		return nil, op.Errorf(op.KindInvalid, "template file: %v", err)
	}
	if st.IsDir() || st.Size() > maxTemplateBytes {
		return nil, op.Errorf(op.KindInvalid, "template file %s is a directory or over %d bytes", path, maxTemplateBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, op.Errorf(op.KindInvalid, "template file: %v", err)
	}
	return data, nil
}

// Load reads and parses a source.
func (s Source) Load() (*Template, []byte, error) {
	data, err := s.load()
	if err != nil {
		return nil, nil, err
	}
	t, err := Parse(string(data))
	if err != nil {
		where := s.Path
		if where == "" {
			where = "built-in " + s.Name
		}
		return nil, nil, op.Errorf(op.KindInvalid, "%s: %v", where, err).WithCategory("template_syntax")
	}
	return t, data, nil
}

// isInline tells template text from a template name: a name is one word of
// letters, digits, - and _; anything else is the template itself.
func isInline(s string) bool { return !validName.MatchString(s) }
