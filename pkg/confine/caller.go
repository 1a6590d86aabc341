package confine

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"lmtool.dev/lm/pkg/op"
)

// For opens the root of a call whose operation has no allow_outside_root:
// the person's is dir (default the current directory); anyone else's is dir
// beneath env.Roots (default the first of them), which it may only narrow.
func For(env *op.Env, dir string) (*Root, error) {
	return open(env, dir, false, false)
}

// ForOutside is [For] for an operation that offers allow_outside_root
// (a person-only field: op.Operation.Call refuses it from an agent the
// person did not grant it to). With it, names may leave the root.
func ForOutside(env *op.Env, dir string, allowOutside bool) (*Root, error) {
	return open(env, dir, true, allowOutside)
}

func open(env *op.Env, dir string, offers, outside bool) (*Root, error) {
	r, err := openFor(env, dir, offers, outside)
	if err != nil {
		return nil, err
	}
	if env.Home != "" {
		home := env.Home
		if real, err := filepath.EvalSymlinks(home); err == nil {
			home = real
		}
		r.protected = []string{home}
		for _, root := range r.confinedTo {
			if real, err := filepath.EvalSymlinks(root); err == nil {
				root = real
			}
			if _, in := beneath(root, home); in {
				r.guardReads = true
			}
		}
	}
	return r, nil
}

func openFor(env *op.Env, dir string, offers, outside bool) (*Root, error) {
	if env.Caller.IsPerson() {
		r, err := Open(dir)
		if err != nil {
			return nil, err
		}
		r.offersOutside, r.outside = offers, outside
		return r, nil
	}
	if len(env.Roots) == 0 {
		return nil, op.Errorf(op.KindDenied, "this %s caller has no roots to work in", env.Caller.Role).WithCategory("outside_root").
			WithHint("the person gives lm mcp (or lm gateway) --root DIR, or the MCP client declares roots")
	}
	r, err := beneathRoots(env.Roots, dir)
	if err != nil {
		return nil, err
	}
	r.offersOutside, r.outside = offers, outside
	return r, nil
}

// beneathRoots opens dir beneath the first of roots that contains it; a
// relative dir is relative to the first root.
func beneathRoots(roots []string, dir string) (*Root, error) {
	base, name := roots[0], dir
	if filepath.IsAbs(dir) {
		base, name = "", ""
		for _, root := range roots {
			r, err := Open(root)
			if err != nil {
				continue
			}
			rel, err := r.Resolve(dir)
			r.Close()
			if err == nil {
				base, name = root, rel
				break
			}
		}
		if base == "" {
			return nil, op.Errorf(op.KindDenied, "root %s is outside the caller's roots", dir).WithCategory("outside_root").
				WithHint("an agent's root may only narrow its roots: %s", strings.Join(roots, ", "))
		}
	}
	r, err := Open(base)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	r.confinedTo = roots
	rel, err := r.Resolve(name)
	if err != nil {
		return nil, err
	}
	return r.sub(rel)
}

// ReadInput reads a file the caller names as input to the call (a template,
// variables, a checklist) of at most limit bytes. The person's name is
// opened as given, relative to the current directory, like any file argument
// on lm's command line; anyone else's is opened beneath the root.
func ReadInput(env *op.Env, r *Root, name string, limit int64) ([]byte, error) {
	if env.Caller.IsPerson() {
		// Non-blocking, as every confined open: a FIFO is refused, not
		// waited on.
		f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readLimited(f, name, limit)
	}
	resolved, err := r.Resolve(name)
	if err != nil {
		return nil, err
	}
	return r.ReadLimited(resolved, limit)
}
