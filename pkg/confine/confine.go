// Package confine opens files beneath a directory so that nothing a caller
// names can leave it. Every open goes through an [os.Root] (or, on the hot
// read path, openat2 with RESOLVE_BENEATH, the same rule in one system
// call): the kernel judges each symlink and ".." at the moment of use, so a
// link swapped in after a check cannot redirect a read or a write.
//
// [For] decides a call's root from its caller: the person works where they
// say (and may reach outside when the operation offers allow_outside_root);
// an agent works beneath its roots ([op.Env.Roots]) and may only narrow them.
package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"lmtool.dev/lm/pkg/op"
)

// Root is a directory tree opened for one call.
type Root struct {
	// Dir is the root, absolute with symlinks resolved: names are reported
	// relative to it.
	Dir string
	// given is the root as the caller named it, made absolute: absolute
	// names under it count as under the root too.
	given   string
	root    *os.Root
	dirFile *os.File // the root directory itself, for openat2 and /proc/self/fd
	// outside is the person's allow_outside_root: names outside the root
	// resolve to absolute paths opened as given.
	outside bool
	// offersOutside says whether the operation has allow_outside_root, so
	// a refusal names it only where it exists.
	offersOutside bool
	// confinedTo lists the roots of a confined caller, for messages; empty
	// for the person, and so what tells a confined caller's writes apart.
	confinedTo []string
	// protected are directories never written to (lm's home), symlinks
	// resolved.
	protected []string
	// guardReads is set when a confined caller's roots hold lm's home:
	// then what it opens is checked not to lie there, since the home holds
	// the person's token and secrets.
	guardReads bool
}

// Open opens dir ("" is the current directory) as a root.
func Open(dir string) (*Root, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, op.Errorf(op.KindInvalid, "root %q: %v", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, op.Errorf(op.KindNotFound, "root %s: %v", abs, unwrapPath(err)).WithCategory("file_not_found")
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, op.Errorf(op.KindInvalid, "root %s: %v", abs, unwrapPath(err)).WithHint("a root is a directory")
	}
	return newRoot(root, real, abs)
}

func newRoot(root *os.Root, real, given string) (*Root, error) {
	f, err := root.Open(".")
	if err != nil {
		root.Close()
		return nil, op.Errorf(op.KindInvalid, "root %s: %v", given, unwrapPath(err))
	}
	return &Root{Dir: real, given: given, root: root, dirFile: f}, nil
}

// Close releases the root's descriptors.
func (r *Root) Close() error {
	r.dirFile.Close()
	return r.root.Close()
}

// Resolve turns a caller's name (relative to the root, or absolute) into a
// resolved name: a clean path relative to the root, or, only when the
// person allowed names outside the root, a clean absolute path. It is
// lexical: symlinks are judged when the name is opened.
func (r *Root) Resolve(name string) (string, error) {
	if name == "" {
		name = "."
	}
	if filepath.IsAbs(name) {
		clean := filepath.Clean(name)
		for _, base := range []string{r.Dir, r.given} {
			if rel, ok := beneath(base, clean); ok {
				return rel, nil
			}
		}
		if r.outside {
			return clean, nil
		}
		return "", r.outsideError(name)
	}
	rel := filepath.Clean(name)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		if r.outside {
			return filepath.Join(r.Dir, rel), nil
		}
		return "", r.outsideError(name)
	}
	return rel, nil
}

// beneath returns path relative to base when it is base or below it.
func beneath(base, path string) (string, bool) {
	if path == base {
		return ".", true
	}
	prefix := base
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	rest, ok := strings.CutPrefix(path, prefix)
	return rest, ok
}

// Abs is a resolved name as an absolute path, for reporting.
func (r *Root) Abs(resolved string) string {
	if filepath.IsAbs(resolved) {
		return resolved
	}
	if resolved == "." {
		return r.Dir
	}
	return r.Dir + "/" + resolved
}

// Contains reports whether an absolute path is lexically within the root.
func (r *Root) Contains(abs string) bool {
	_, ok := beneath(r.Dir, filepath.Clean(abs))
	return ok
}

// Stat follows symlinks beneath the root.
func (r *Root) Stat(resolved string) (fs.FileInfo, error) {
	if filepath.IsAbs(resolved) {
		if err := r.mayLeave(resolved); err != nil {
			return nil, err
		}
		return os.Stat(resolved)
	}
	st, err := r.root.Stat(resolved)
	if r.leaves(err) {
		return os.Stat(r.Abs(resolved))
	}
	return st, r.classify(resolved, err)
}

// ReadFile reads a whole regular file beneath the root; anything else (a
// FIFO, a device) is refused before it is read.
func (r *Root) ReadFile(resolved string) ([]byte, error) { return r.ReadLimited(resolved, maxReadFile) }

// maxReadFile bounds ReadFile: what it reads (task files, go.mod) is
// nowhere near it, and a larger file is not what the caller meant.
const maxReadFile = 256 << 20

// ReadDir lists a directory beneath the root.
func (r *Root) ReadDir(resolved string) ([]fs.DirEntry, error) {
	if filepath.IsAbs(resolved) {
		if err := r.mayLeave(resolved); err != nil {
			return nil, err
		}
		return os.ReadDir(resolved)
	}
	f, err := r.root.Open(resolved)
	if r.leaves(err) {
		return os.ReadDir(r.Abs(resolved))
	}
	if err != nil {
		return nil, r.classify(resolved, err)
	}
	defer f.Close()
	// Not io/fs's ReadDir, which refuses names that are not UTF-8.
	entries, err := f.ReadDir(-1)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return entries, err
}

// OpenDir opens a directory beneath the root. Its [ProcPath] names that
// very directory for a child process's working directory, so a component
// swapped for a symlink afterwards cannot move the child elsewhere.
func (r *Root) OpenDir(resolved string) (*os.File, error) {
	if filepath.IsAbs(resolved) {
		if err := r.mayLeave(resolved); err != nil {
			return nil, err
		}
		return os.Open(resolved)
	}
	if resolved == "." {
		return r.root.Open(".")
	}
	sub, err := r.root.OpenRoot(resolved)
	if r.leaves(err) {
		return os.Open(r.Abs(resolved))
	}
	if err != nil {
		return nil, r.classify(resolved, err)
	}
	defer sub.Close()
	f, err := sub.Open(".")
	return f, r.classify(resolved, err)
}

// ProcPath names an open file through /proc, for a child process's working
// directory: the child changes into the directory the descriptor holds.
func ProcPath(f *os.File) string { return fmt.Sprintf("/proc/self/fd/%d", f.Fd()) }

// RealPath is where an open file is now, symlinks resolved.
func RealPath(f *os.File) (string, error) { return os.Readlink(ProcPath(f)) }

// sub narrows a confined caller's root to a directory beneath it (a name
// Resolve returned, so never absolute).
func (r *Root) sub(resolved string) (*Root, error) {
	if resolved == "." {
		return r.clone()
	}
	sub, err := r.root.OpenRoot(resolved)
	if err != nil {
		return nil, r.classify(resolved, err)
	}
	s, err := newRoot(sub, "", r.Abs(resolved))
	if err != nil {
		return nil, err
	}
	if s.Dir, err = RealPath(s.dirFile); err != nil {
		s.Close()
		return nil, op.Errorf(op.KindInternal, "locate %s: %w", resolved, err)
	}
	s.offersOutside, s.confinedTo, s.protected, s.guardReads = r.offersOutside, r.confinedTo, r.protected, r.guardReads
	return s, nil
}

func (r *Root) clone() (*Root, error) {
	sub, err := r.root.OpenRoot(".")
	if err != nil {
		return nil, op.Errorf(op.KindInternal, "reopen %s: %w", r.Dir, err)
	}
	s, err := newRoot(sub, r.Dir, r.given)
	if err != nil {
		return nil, err
	}
	s.outside, s.offersOutside, s.confinedTo, s.protected, s.guardReads = r.outside, r.offersOutside, r.confinedTo, r.protected, r.guardReads
	return s, nil
}

// mayLeave guards the absolute names only Resolve with outside may produce.
func (r *Root) mayLeave(abs string) error {
	if r.outside {
		return nil
	}
	return r.outsideError(abs)
}

// leaves reports an error of a name that left the root through a symlink
// when the person allowed names outside: it is then opened as given.
func (r *Root) leaves(err error) bool { return r.outside && err != nil && escapes(err) }

// classify turns an os.Root error into lm's: a name that escapes through a
// symlink is outside the root (denied), a missing one not found.
func (r *Root) classify(name string, err error) error {
	switch {
	case err == nil:
		return nil
	case escapes(err):
		return r.outsideError(name)
	}
	return err
}

func escapes(err error) bool {
	if errors.Is(err, unix.EXDEV) {
		return true
	}
	// os.Root's own error is unexported: "path escapes from parent",
	// possibly under several PathErrors.
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}

// IsOutside reports whether err refuses a name outside the root.
func IsOutside(err error) bool {
	var e *op.Error
	return errors.As(err, &e) && e.Category == "outside_root"
}

func (r *Root) outsideError(name string) error {
	e := op.Errorf(op.KindDenied, "%s is outside the root %s", name, r.Dir).WithCategory("outside_root")
	switch {
	case len(r.confinedTo) > 0:
		return e.WithHint("an agent's paths stay beneath its roots (%s); the person widens them with lm mcp --root DIR or the MCP client's roots",
			strings.Join(r.confinedTo, ", "))
	case r.offersOutside:
		return e.WithHint("pass --root DIR to work elsewhere, or --allow-outside-root to read it anyway")
	}
	return e.WithHint("pass --root DIR to work elsewhere")
}

// unwrapPath drops a PathError's repetition of the path a message already
// names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
