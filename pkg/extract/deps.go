package extract

import (
	"bufio"
	"bytes"
	"context"
	"path/filepath"
	"strings"

	"lmtool.dev/lm/pkg/confine"
	"lmtool.dev/lm/pkg/op"
)

// Dependencies is one file's place in the import graph.
type Dependencies struct {
	Internal []string `json:"internal" jsonschema:"files (Go: package directories) under root that it imports"`
	External []string `json:"external" jsonschema:"modules it imports from outside root"`
	Depth    int      `json:"depth" jsonschema:"0 for a file given in the call, N for one reached through N imports"`
}

// dependencies builds the import graph of files, following internal
// imports depth levels deep.
func dependencies(ctx context.Context, env *op.Env, in Input, root *confine.Root, files []File, results map[string]FileResult) (int64, error) {
	var read int64
	goModule := goModulePath(root)
	seen := map[string]bool{}
	frontier := files
	for _, f := range files {
		seen[f.Path] = true
	}
	for level := 0; len(frontier) > 0; level++ {
		var next []File
		for _, f := range frontier {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			content, res, ok := readFile(root, f.rel, in.MaxFileBytes, nil)
			if !ok {
				results[f.Name] = res
				continue
			}
			read += int64(len(content))
			lang := LanguageOf(f.Path)
			if lang == "" {
				results[f.Name] = failed("unsupported_language", errUnsupported(f.Path))
				continue
			}
			syms, err := Scan(lang, content)
			if err != nil {
				results[f.Name] = failed("parse_error", err)
				continue
			}
			deps := &Dependencies{Internal: []string{}, External: []string{}, Depth: level}
			for _, im := range *syms.Imports {
				targets, internal := resolveImport(root, goModule, lang, f.Path, im)
				if !internal {
					if !rustLocal(lang, im.From) {
						deps.External = append(deps.External, im.From)
					}
					continue
				}
				for _, t := range targets {
					rel, _ := filepath.Rel(root.Dir, t)
					deps.Internal = append(deps.Internal, filepath.ToSlash(rel))
					if level+1 > in.Depth {
						continue
					}
					for _, file := range sourceFiles(root, t) {
						if !seen[file] && root.Contains(file) && LanguageOf(file) != "" {
							seen[file] = true
							r, _ := filepath.Rel(root.Dir, file)
							next = append(next, File{Name: filepath.ToSlash(r), Path: file, rel: r})
						}
					}
				}
			}
			deps.Internal, deps.External = dedupe(deps.Internal), dedupe(deps.External)
			results[f.Name] = FileResult{Found: true, Language: lang, Dependencies: deps}
		}
		if level+1 > in.Depth {
			break
		}
		frontier = next
	}
	return read, nil
}

func errUnsupported(path string) error {
	return &unsupportedError{path}
}

type unsupportedError struct{ path string }

func (e *unsupportedError) Error() string {
	return "unsupported language for " + e.path + " (supported: Go, JavaScript, TypeScript, Python, Rust)"
}

// rustLocal reports a Rust path inside the crate (crate::, self::, super::),
// neither a file nor an outside dependency.
func rustLocal(lang, path string) bool {
	first, _, _ := strings.Cut(path, "::")
	return lang == "rust" && (first == "crate" || first == "self" || first == "super")
}

// sourceFiles is the file itself, or a Go package directory's non-test
// files; nothing when the target does not exist beneath the root.
func sourceFiles(root *confine.Root, target string) []string {
	rel, err := root.Resolve(target)
	if err != nil {
		return nil
	}
	st, err := root.Stat(rel)
	if err != nil {
		return nil
	}
	if !st.IsDir() {
		return []string{target}
	}
	entries, _ := root.ReadDir(rel)
	var files []string
	for _, e := range entries {
		if name := e.Name(); !e.IsDir() && strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			files = append(files, filepath.Join(target, name))
		}
	}
	return files
}

var jsExtensions = []string{".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts"}

// resolveImport finds the files an import refers to under root; internal
// is false for imports from outside (packages, the standard library).
func resolveImport(r *confine.Root, goModule, lang, from string, im Import) (targets []string, internal bool) {
	root, dir := r.Dir, filepath.Dir(from)
	exists := func(p string) bool {
		rel, err := r.Resolve(p)
		if err != nil {
			return false
		}
		st, err := r.Stat(rel)
		return err == nil && !st.IsDir()
	}
	first := func(cands ...string) ([]string, bool) {
		for _, c := range cands {
			if exists(c) {
				return []string{c}, true
			}
		}
		return nil, false
	}
	switch lang {
	case "javascript", "typescript":
		if !strings.HasPrefix(im.From, ".") {
			return nil, false
		}
		base := filepath.Join(dir, im.From)
		cands := []string{base}
		stem := strings.TrimSuffix(base, filepath.Ext(base))
		for _, ext := range jsExtensions {
			cands = append(cands, base+ext, stem+ext, filepath.Join(base, "index"+ext))
		}
		if t, ok := first(cands...); ok {
			return t, true
		}
		return []string{base}, true // relative, but missing: still internal
	case "python":
		mod := strings.TrimLeft(im.From, ".")
		dots := len(im.From) - len(mod)
		base := root
		if dots > 0 {
			base = dir
			for range dots - 1 {
				base = filepath.Dir(base)
			}
		}
		p := filepath.Join(base, filepath.FromSlash(strings.ReplaceAll(mod, ".", "/")))
		return first(p+".py", filepath.Join(p, "__init__.py"))
	case "rust":
		if im.Kind != "mod" {
			return nil, false
		}
		modDir := dir
		if name := filepath.Base(from); name != "mod.rs" && name != "lib.rs" && name != "main.rs" {
			modDir = strings.TrimSuffix(from, ".rs")
		}
		if t, ok := first(filepath.Join(modDir, im.From+".rs"), filepath.Join(modDir, im.From, "mod.rs")); ok {
			return t, true
		}
		return nil, false
	case "go":
		if goModule == "" || (im.From != goModule && !strings.HasPrefix(im.From, goModule+"/")) {
			return nil, false
		}
		return []string{filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(im.From, goModule), "/")))}, true
	}
	return nil, false
}

// goModulePath reads the module path from root's go.mod, if any.
func goModulePath(root *confine.Root) string {
	data, err := root.ReadFile("go.mod")
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}
