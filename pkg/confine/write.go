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
// core.fsmonitor), anything under lm's own home (allowlists, config,
// secrets, the store), and, for a confined caller (an agent), the files
// from which the person's tools start programs (programStarters). It
// returns the absolute path written.
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
	if len(r.confinedTo) > 0 {
		if part, ok := startsPrograms(resolved); ok {
			return "", startsProgramsError(resolved, part)
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
	// The directory really written in, the root's own path included: a
	// link to .vscode by another name leads there too, and so does a root
	// inside one.
	if len(r.confinedTo) > 0 {
		if part, ok := startsPrograms(real); ok {
			return startsProgramsError(name, part)
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

// programStarters are the names in a project from which the person's own
// tools start programs when they open it: MCP clients' and editors' server
// and task lists (Claude Code's .mcp.json and .claude, Cursor's .cursor,
// VS Code's .vscode, whose tasks can also run on opening a folder, Zed's
// .zed, Gemini's .gemini, Codex's .codex), direnv's .envrc and mise's
// configuration, whose hooks and env scripts run on entering the
// directory. An agent that wrote one would have the person's next session
// run its command, so an agent writes none; the person may.
var programStarters = []string{".mcp.json", ".claude", ".cursor", ".vscode", ".zed", ".gemini", ".codex", ".envrc",
	"mise.toml", ".mise.toml", ".mise", "mise.local.toml", ".mise.local.toml"}

// startsPrograms returns the first component of a slash-separated name
// that is one of programStarters.
func startsPrograms(name string) (string, bool) {
	for _, part := range strings.Split(name, "/") {
		for _, p := range programStarters {
			if strings.EqualFold(part, p) {
				return part, true
			}
		}
	}
	return "", false
}

func startsProgramsError(name, part string) error {
	return op.Errorf(op.KindDenied, "%s is not writable by an agent: %s configures programs the person's tools start when they open the project", name, part).
		WithCategory("protected_path").
		WithHint("the person writes it (lm generate from the command line), after reading what it runs")
}

func protectedError(name, why string) error {
	return op.Errorf(op.KindDenied, "%s is not writable: %s", name, why).WithCategory("protected_path").
		WithHint("lm writes neither git's files (they can run programs) nor its own settings; edit them yourself")
}
