package generate

import (
	"embed"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"lmtool.dev/lm/pkg/confine"
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

// catalog finds named templates in their directories and the built-ins:
// the project's .lm/templates, read beneath the root, then lm's home.
type catalog struct {
	project *confine.Root
	home    string // $LM_HOME/templates, or ""
}

func newCatalog(root *confine.Root, home string) catalog {
	c := catalog{project: root}
	if home != "" {
		c.home = filepath.Join(home, "templates")
		// LM_HOME inside the project: the same directory once.
		if real, err := filepath.EvalSymlinks(c.home); err == nil && real == root.Abs(projectTemplates) {
			c.home = ""
		}
	}
	return c
}

// projectTemplates is where a project keeps its templates.
const projectTemplates = ".lm/templates"

// All lists every template by name, the winning source of each name.
func (c catalog) All() ([]Source, error) {
	byName := map[string]Source{}
	add := func(s Source) {
		if _, ok := byName[s.Name]; !ok {
			byName[s.Name] = s
		}
	}
	entries, err := c.project.ReadDir(projectTemplates)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, op.Errorf(op.KindInvalid, "read templates in %s: %v", c.project.Abs(projectTemplates), err)
	}
	for _, e := range entries {
		rel := projectTemplates + "/" + e.Name()
		addFile(add, e, "project", c.project.Abs(rel), func() ([]byte, error) { return c.project.ReadLimited(rel, maxTemplateBytes) })
	}
	if c.home != "" {
		entries, err := os.ReadDir(c.home)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, op.Errorf(op.KindInvalid, "read templates in %s: %v", c.home, err)
		}
		for _, e := range entries {
			path := filepath.Join(c.home, e.Name())
			addFile(add, e, "home", path, func() ([]byte, error) { return readAtMost(path, maxTemplateBytes+1) })
		}
	}
	entries, _ = builtins.ReadDir("templates")
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

// addFile adds a directory entry that names a template.
func addFile(add func(Source), e fs.DirEntry, origin, path string, read func() ([]byte, error)) {
	name, _, _ := strings.Cut(e.Name(), ".")
	if e.IsDir() || !validName.MatchString(name) {
		return
	}
	add(Source{Name: name, Origin: origin, Path: path, load: func() ([]byte, error) { return readTemplate(path, read) }})
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

// readAtMost reads up to n bytes of a file.
func readAtMost(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// readTemplate reads a template file, refusing what cannot be a template.
func readTemplate(path string, read func() ([]byte, error)) ([]byte, error) {
	data, err := read()
	switch {
	case err == nil:
		if len(data) > maxTemplateBytes {
			return nil, op.Errorf(op.KindInvalid, "template file %s is over %d bytes", path, maxTemplateBytes)
		}
		return data, nil
	case confine.IsOutside(err):
		return nil, err
	case errors.Is(err, fs.ErrNotExist):
		return nil, op.Errorf(op.KindNotFound, "template file %s does not exist", path).WithCategory("file_not_found")
	}
	return nil, op.Errorf(op.KindInvalid, "template file: %v", err)
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
