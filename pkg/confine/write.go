package confine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"lmtool.dev/lm/pkg/op"
)

// WriteFile writes content to a name beneath the root atomically: a
// temporary file in the same directory, then a rename (or, without force, a
// hard link, which fails if the name exists, so nothing is clobbered by a
// race). Every step is relative to the one directory descriptor it checked,
// so a link swapped in meanwhile cannot move the write.
//
// Files that would become code or settings are never written: anything in a
// .git directory or in a git directory by another name (hooks, config with
// core.fsmonitor), and anything under lm's own home (allowlists, config,
// secrets, the store). It returns the absolute path written.
func (r *Root) WriteFile(resolved string, content []byte, force bool) (string, error) {
	if filepath.IsAbs(resolved) {
		return "", r.outsideError(resolved)
	}
	if resolved == "." {
		return "", op.Errorf(op.KindConflict, "%s is a directory", r.Dir)
	}
	for _, part := range strings.Split(resolved, "/") {
		if strings.EqualFold(part, ".git") {
			return "", protectedError(resolved, "it is inside a .git directory")
		}
	}
	dirName, base := filepath.Split(resolved)
	dirName = filepath.Clean(dirName)
	if dirName != "." {
		if err := r.classify(dirName, r.root.MkdirAll(dirName, 0o755)); IsOutside(err) {
			return "", err
		} else if err != nil {
			return "", op.Errorf(op.KindInvalid, "create %s: %v", dirName, err)
		}
	}
	dir, err := r.root.OpenRoot(dirName)
	if err != nil {
		return "", r.classify(dirName, err)
	}
	defer dir.Close()
	if err := r.mayWriteIn(dir, resolved); err != nil {
		return "", err
	}
	if st, err := dir.Lstat(base); err == nil {
		if st.IsDir() {
			return "", op.Errorf(op.KindConflict, "%s is a directory", resolved)
		}
		if !force {
			return "", existsError(resolved)
		}
	}
	tmp, err := writeTemp(dir, base, content)
	if err != nil {
		return "", op.Errorf(op.KindInternal, "write %s: %w", resolved, err)
	}
	defer dir.Remove(tmp)
	if force {
		err = dir.Rename(tmp, base)
	} else if err = dir.Link(tmp, base); errors.Is(err, fs.ErrExist) {
		return "", existsError(resolved)
	}
	if err != nil {
		return "", op.Errorf(op.KindInternal, "write %s: %w", resolved, err)
	}
	return r.Abs(resolved), nil
}

// mayWriteIn refuses a directory that is, or is inside, lm's home or a git
// directory, judged by where the open directory really is.
func (r *Root) mayWriteIn(dir *os.Root, name string) error {
	f, err := dir.Open(".")
	if err != nil {
		return op.Errorf(op.KindInternal, "open the directory of %s: %w", name, err)
	}
	defer f.Close()
	real, err := RealPath(f)
	if err != nil {
		return op.Errorf(op.KindInternal, "locate the directory of %s: %w", name, err)
	}
	for _, home := range r.protected {
		if _, in := beneath(home, real); in {
			return protectedError(name, "it is inside lm's home "+home+" (allowlists, settings, secrets, the store)")
		}
	}
	for d := real; ; d = filepath.Dir(d) {
		if strings.EqualFold(filepath.Base(d), ".git") || isGitDir(d) {
			return protectedError(name, "it is inside the git directory "+d)
		}
		if filepath.Dir(d) == d {
			return nil
		}
	}
}

// isGitDir reports whether dir looks like a repository's git directory
// (a bare repository, or one named by core.worktree or GIT_DIR).
func isGitDir(dir string) bool {
	for _, part := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Lstat(filepath.Join(dir, part)); err != nil {
			return false
		}
	}
	return true
}

func writeTemp(dir *os.Root, base string, content []byte) (string, error) {
	var suffix [6]byte
	rand.Read(suffix[:])
	name := "." + base + "." + hex.EncodeToString(suffix[:]) + ".tmp"
	f, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = dir.Chmod(name, 0o644) // the umask may have narrowed it
	}
	if err != nil {
		dir.Remove(name)
		return "", err
	}
	return name, nil
}

func existsError(name string) error {
	return op.Errorf(op.KindConflict, "%s already exists", name).WithCategory("file_exists").
		WithHint("pass --force (force: true) to overwrite it")
}

func protectedError(name, why string) error {
	return op.Errorf(op.KindDenied, "%s is not writable: %s", name, why).WithCategory("protected_path").
		WithHint("lm writes neither git's files (they can run programs) nor its own settings; edit them yourself")
}
