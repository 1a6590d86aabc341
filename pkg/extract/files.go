package extract

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"lmtool.dev/lm/pkg/op"
)

// Root confines file access to a directory tree.
type Root struct {
	Dir          string // absolute, symlinks resolved
	AllowOutside bool
	// Environ is the caller's environment (op.Env.Environ), which the git
	// that lists a worktree's files runs with.
	Environ []string
}

// NewRoot resolves dir ("" is the current directory).
func NewRoot(dir string, allowOutside bool) (*Root, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, op.Errorf(op.KindInvalid, "root %q: %v", dir, err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, op.Errorf(op.KindNotFound, "root %s: %v", abs, err).WithCategory("file_not_found")
	}
	return &Root{Dir: resolved, AllowOutside: allowOutside}, nil
}

// Resolve returns the absolute path of name (relative to the root unless
// absolute), refusing one that leaves the root, through a symlink too.
func (r *Root) Resolve(name string) (string, error) {
	abs := name
	if !filepath.IsAbs(name) {
		abs = filepath.Join(r.Dir, name)
	}
	abs = filepath.Clean(abs)
	if r.AllowOutside {
		return abs, nil
	}
	real := abs
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		real = resolved
	}
	if !r.contains(real) {
		return "", op.Errorf(op.KindDenied, "%s is outside the root %s", name, r.Dir).
			WithCategory("outside_root").WithHint("pass --root, or --allow-outside-root to read it anyway")
	}
	return abs, nil
}

func (r *Root) contains(p string) bool {
	rel, err := filepath.Rel(r.Dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// File is one file to process: the name reported and where it is.
type File struct {
	Name string // as reported: the argument, or the argument joined with a walked path
	Path string // absolute
}

// Expand turns arguments (files, directories, globs with ** for any depth)
// into files. Directories are walked with .gitignore respected: inside a git
// worktree through git itself, otherwise skipping .git directories. An
// argument matching nothing is reported in missing.
func (r *Root) Expand(ctx context.Context, args []string) (files []File, missing []string, err error) {
	// One argument names each file once; several may overlap.
	var seen map[string]bool
	if len(args) > 1 {
		seen = map[string]bool{}
	}
	add := func(f File) {
		if seen == nil {
			files = append(files, f)
		} else if !seen[f.Path] {
			seen[f.Path] = true
			files = append(files, f)
		}
	}
	for _, arg := range args {
		if strings.ContainsAny(arg, "*?[") {
			matched, err := r.glob(ctx, arg)
			if err != nil {
				return nil, nil, err
			}
			if len(matched) == 0 {
				missing = append(missing, arg)
			}
			for _, f := range matched {
				add(f)
			}
			continue
		}
		abs, err := r.Resolve(arg)
		if err != nil {
			return nil, nil, err
		}
		st, err := os.Stat(abs)
		switch {
		case err != nil:
			missing = append(missing, arg)
		case st.IsDir():
			walked, err := r.walk(ctx, abs)
			if err != nil {
				return nil, nil, err
			}
			for _, rel := range walked {
				add(File{Name: joinName(arg, rel), Path: under(abs, rel)})
			}
		default:
			add(File{Name: arg, Path: abs})
		}
	}
	return files, missing, nil
}

// under is filepath.Join(dir, rel) for a clean dir and a clean, relative
// rel (what walk lists), without cleaning them again for every file.
func under(dir, rel string) string {
	if strings.HasSuffix(dir, string(filepath.Separator)) {
		return dir + filepath.FromSlash(rel)
	}
	return dir + string(filepath.Separator) + filepath.FromSlash(rel)
}

func joinName(dir, rel string) string {
	if dir == "." {
		return rel
	}
	return strings.TrimSuffix(filepath.ToSlash(dir), "/") + "/" + rel
}

// glob expands a pattern by walking its literal leading directory.
func (r *Root) glob(ctx context.Context, pattern string) ([]File, error) {
	pattern = filepath.ToSlash(pattern)
	segs := strings.Split(pattern, "/")
	i := 0
	for i < len(segs)-1 && !strings.ContainsAny(segs[i], "*?[") {
		i++
	}
	base := strings.Join(segs[:i], "/")
	if base == "" && strings.HasPrefix(pattern, "/") {
		base = "/"
	}
	rest := strings.Join(segs[i:], "/")
	re, err := globRegexp(rest)
	if err != nil {
		return nil, op.Errorf(op.KindInvalid, "bad glob %q: %v", pattern, err)
	}
	dir := base
	if dir == "" {
		dir = "."
	}
	abs, err := r.Resolve(dir)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return nil, nil
	}
	walked, err := r.walk(ctx, abs)
	if err != nil {
		return nil, err
	}
	var out []File
	for _, rel := range walked {
		if re.MatchString(rel) {
			out = append(out, File{Name: joinName(dir, rel), Path: under(abs, rel)})
		}
	}
	return out, nil
}

// globRegexp translates a slash-separated glob: ** spans directories, * and
// ? stay within one, [...] is a class.
func globRegexp(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; {
		case strings.HasPrefix(glob[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case strings.HasPrefix(glob[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			end := strings.IndexByte(glob[i:], ']')
			if end < 0 {
				return nil, errors.New("unterminated [")
			}
			b.WriteString(glob[i : i+end+1])
			i += end
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// walk lists the files under dir as slash-separated relative paths, sorted.
func (r *Root) walk(ctx context.Context, dir string) ([]string, error) {
	if files, ok := gitFiles(ctx, dir, r.Environ); ok {
		return files, nil
	}
	// A directory named through a symlink (already checked to be allowed)
	// is walked where it leads: WalkDir would not enter a link.
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	var files []string
	prefix := under(dir, "") // WalkDir's paths are dir joined with the rest
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are skipped, as find does with a message
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			files = append(files, filepath.ToSlash(strings.TrimPrefix(p, prefix)))
		}
		return ctx.Err()
	})
	sort.Strings(files)
	return files, err
}

// gitFiles lists tracked and untracked-but-not-ignored files under dir when
// it is inside a git worktree: git applies every .gitignore exactly.
func gitFiles(ctx context.Context, dir string, environ []string) ([]string, bool) {
	if !mayBeWorktree(dir, environ) {
		return nil, false
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, false
	}
	cmd := exec.CommandContext(ctx, "git", "--no-optional-locks", "-C", dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--deduplicate")
	cmd.Env = op.ChildEnv(environ)
	var out bytes.Buffer
	cmd.Stdout = &out
	if cmd.Run() != nil {
		return nil, false
	}
	var files []string
	for _, p := range bytes.Split(out.Bytes(), []byte{0}) {
		if len(p) == 0 {
			continue
		}
		// Deleted but still tracked files are listed too; keep what exists.
		if st, err := os.Lstat(filepath.Join(dir, string(p))); err == nil && st.Mode().IsRegular() {
			files = append(files, string(p))
		}
	}
	sort.Strings(files)
	return files, true
}

// mayBeWorktree reports whether git could find a repository for dir: a
// .git directory or file (a linked worktree's, a submodule's) in dir or
// above it, or GIT_DIR set in environ. Asking git costs a process start,
// which would otherwise be paid for every tree outside a repository.
func mayBeWorktree(dir string, environ []string) bool {
	if gitDir, _ := op.LookupEnv(environ, "GIT_DIR"); gitDir != "" {
		return true
	}
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}
