package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"lmtool.dev/lm/pkg/confine"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/safegit"
)

// File is one file to process: the name reported and where it is.
type File struct {
	Name string // as reported: the argument, or the argument joined with a walked path
	Path string // absolute, for reports and the language
	rel  string // resolved against the root: what is opened
}

// Expand turns arguments (files, directories, globs with ** for any depth)
// into files. Directories are walked with .gitignore respected: inside a git
// worktree through git itself, otherwise skipping .git directories; a
// directory the caller names that .gitignore excludes is walked all the
// same, as rg does, since naming it says the caller wants it. Failures
// holds a result for each name that yields no file: an argument matching
// nothing, a directory that holds no file to read (all ignored, or only
// symlinks, which are not followed), a directory the walk could not read.
// Git, when it lists a worktree's files, runs with environ, the caller's
// environment (op.Env.Environ).
func Expand(ctx context.Context, r *confine.Root, environ []string, args []string) (files []File, failures map[string]FileResult, err error) {
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
	failures = map[string]FileResult{}
	missing := func(arg string) {
		failures[arg] = failed("file_not_found", fmt.Errorf("no such file: %s", arg))
	}
	unreadable := func(dir string, dirs []*fs.PathError) {
		for _, d := range dirs {
			name := joinName(dir, d.Path)
			failures[name] = failed("unreadable", fmt.Errorf("%s: %w", name, d.Err))
		}
	}
	for _, arg := range args {
		if strings.ContainsAny(arg, "*?[") {
			dir, matched, unread, err := glob(ctx, r, environ, arg)
			if err != nil {
				return nil, nil, err
			}
			unreadable(dir, unread)
			if len(matched) == 0 && len(unread) == 0 {
				missing(arg)
			}
			for _, f := range matched {
				add(f)
			}
			continue
		}
		rel, err := r.Resolve(arg)
		if err != nil {
			return nil, nil, err
		}
		st, err := r.Stat(rel)
		switch {
		case confine.IsOutside(err):
			return nil, nil, err
		case err != nil:
			missing(arg)
		case st.IsDir():
			walked, unread, err := walk(ctx, r, environ, rel)
			if err != nil {
				return nil, nil, err
			}
			unreadable(arg, unread)
			if len(walked) == 0 && len(unread) == 0 {
				failures[arg] = failed("no_files", fmt.Errorf("directory %s holds no file to read: everything in it is ignored by .gitignore, or a symlink (not followed)", arg))
			}
			abs := r.Abs(rel)
			files = slices.Grow(files, len(walked))
			for _, w := range walked {
				add(File{Name: joinName(arg, w), Path: under(abs, w), rel: under(rel, w)})
			}
		default:
			add(File{Name: arg, Path: r.Abs(rel), rel: rel})
		}
	}
	return files, failures, nil
}

// under is filepath.Join(dir, rel) for a clean dir and a clean, relative
// rel (what walk lists), without cleaning them again for every file.
func under(dir, rel string) string {
	if dir == "." {
		return filepath.FromSlash(rel)
	}
	if strings.HasSuffix(dir, string(filepath.Separator)) {
		return dir + filepath.FromSlash(rel)
	}
	return dir + string(filepath.Separator) + filepath.FromSlash(rel)
}

func joinName(dir, rel string) string {
	switch {
	case rel == ".":
		return dir
	case dir == ".":
		return rel
	}
	return strings.TrimSuffix(filepath.ToSlash(dir), "/") + "/" + rel
}

// glob expands a pattern by walking its literal leading directory, dir,
// which names what the walk could not read.
func glob(ctx context.Context, r *confine.Root, environ []string, pattern string) (dir string, files []File, unreadable []*fs.PathError, err error) {
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
		return "", nil, nil, op.Errorf(op.KindInvalid, "bad glob %q: %v", pattern, err)
	}
	dir = base
	if dir == "" {
		dir = "."
	}
	rel, err := r.Resolve(dir)
	if err != nil {
		return "", nil, nil, err
	}
	if st, err := r.Stat(rel); confine.IsOutside(err) {
		return "", nil, nil, err
	} else if err != nil || !st.IsDir() {
		return dir, nil, nil, nil
	}
	walked, unreadable, err := walk(ctx, r, environ, rel)
	if err != nil {
		return "", nil, nil, err
	}
	abs := r.Abs(rel)
	for _, w := range walked {
		if re.MatchString(w) {
			files = append(files, File{Name: joinName(dir, w), Path: under(abs, w), rel: under(rel, w)})
		}
	}
	return dir, files, unreadable, nil
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

// walk lists the files under a directory beneath the root as
// slash-separated relative paths, sorted, and the directories it could not
// read. Inside a git worktree git lists them, applying every .gitignore
// exactly; the files are still opened beneath the root, so what git names
// cannot lead outside it.
func walk(ctx context.Context, r *confine.Root, environ []string, rel string) ([]string, []*fs.PathError, error) {
	if files, unreadable, ok := gitFiles(ctx, r, environ, rel); ok {
		return files, unreadable, nil
	}
	return r.Files(ctx, rel)
}

// gitFiles lists tracked and untracked-but-not-ignored files under a
// directory when it is inside a git worktree, and the directories git could
// not read. Git runs in the directory the root opened (through its
// descriptor), with the repository's programs (fsmonitor, hooks) turned off.
func gitFiles(ctx context.Context, r *confine.Root, environ []string, rel string) ([]string, []*fs.PathError, bool) {
	if !mayBeWorktree(r.Abs(rel), environ) {
		return nil, nil, false
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, nil, false
	}
	dir, err := r.OpenDir(rel)
	if err != nil {
		return nil, nil, false
	}
	defer dir.Close()
	cmd := safegit.ForListing("", environ).Command(ctx, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--deduplicate")
	cmd.Dir = confine.ProcPath(dir)
	var out, warnings bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &warnings
	if cmd.Run() != nil {
		return nil, nil, false
	}
	if out.Len() == 0 && ignored(ctx, dir, environ) {
		// The directory itself is ignored (node_modules, dist): git
		// lists nothing under it, but the caller named it.
		return nil, nil, false
	}
	var unreadable []*fs.PathError
	for _, m := range gitUnreadable.FindAllSubmatch(warnings.Bytes(), -1) {
		unreadable = append(unreadable, &fs.PathError{Op: "open", Path: strings.TrimSuffix(string(m[1]), "/"), Err: errors.New(strings.ToLower(string(m[2])))})
	}
	var files []string
	for _, p := range bytes.Split(out.Bytes(), []byte{0}) {
		if len(p) == 0 {
			continue
		}
		// Deleted but still tracked files are listed too; keep what exists.
		// This looks at metadata only (reading is beneath the root), in
		// one call relative to the directory git listed.
		var st unix.Stat_t
		if unix.Fstatat(int(dir.Fd()), string(p), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			files = append(files, string(p))
		}
	}
	sort.Strings(files)
	return files, unreadable, true
}

// gitUnreadable is how git (under LC_ALL=C) warns of a directory it could
// not read, which it then leaves out of its listing.
var gitUnreadable = regexp.MustCompile(`(?m)^warning: could not open directory '(.*)': (.*)$`)

// ignored reports whether git's ignore rules exclude the directory dir
// itself, or a directory above it.
func ignored(ctx context.Context, dir *os.File, environ []string) bool {
	cmd := safegit.ForListing("", environ).Command(ctx, "check-ignore", "-q", ".")
	cmd.Dir = confine.ProcPath(dir)
	return cmd.Run() == nil
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
