// Package gitx answers questions about a git repository (status, diff, log,
// changed files) as structured data, from the git binary's porcelain and -z
// outputs. Git runs with argv only (never a shell) and --no-optional-locks,
// and refs or paths that could be read as options, or that leave the
// repository, are refused.
package gitx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"lmtool.dev/lm/pkg/op"
)

// repo is a repository lm runs git in.
type repo struct {
	dir  string // where git runs: the worktree's top level
	top  string // the same, symlinks resolved
	root string // the --root that user paths are relative to, symlinks resolved
	// environ is the caller's environment (op.Env.Environ), for git.
	environ []string
}

// openRepo finds the repository containing dir.
func openRepo(ctx context.Context, environ []string, dir string) (*repo, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, op.Errorf(op.KindUnavailable, "git is not installed: %v", err).WithCategory("git_unavailable")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, op.Errorf(op.KindInvalid, "root %q: %v", dir, err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return nil, op.Errorf(op.KindNotFound, "root %s is not a directory", abs).WithCategory("file_not_found")
	}
	r := &repo{dir: abs, root: abs, environ: environ}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		r.root = resolved
	}
	out, err := r.git(ctx, "rev-parse", "--show-toplevel")
	if ctx.Err() != nil {
		return nil, ctx.Err() // cancelled: say so, not "not a repository"
	}
	if err != nil {
		return nil, op.Errorf(op.KindNotFound, "not a git repository: %s", abs).
			WithCategory("not_a_repository").WithHint("run it inside a git worktree, or pass --root DIR")
	}
	top := strings.TrimSuffix(string(out), "\n")
	if resolved, err := filepath.EvalSymlinks(top); err == nil {
		top = resolved
	}
	// Run from the top level from now on, so every path git prints is
	// relative to it (status would otherwise print them relative to dir).
	r.top, r.dir = top, top
	return r, nil
}

// git runs git with args in the repository and returns its stdout.
func (r *repo) git(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--no-optional-locks", "-C", r.dir}, args...)...)
	cmd.Env = op.ChildEnv(r.environ, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		msg := strings.TrimSpace(stderr.String())
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) && msg != "" {
			return nil, fmt.Errorf("git %s: %s", args[0], firstLine(msg))
		}
		return nil, fmt.Errorf("git %s: %w", args[0], err)
	}
	return stdout.Bytes(), nil
}

// hasHead reports whether HEAD names a commit (false in an empty repository).
func (r *repo) hasHead(ctx context.Context) bool {
	_, err := r.git(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	return err == nil
}

// emptyTree is the id of the empty tree in the repository's hash format,
// what an unborn HEAD is compared with.
func (r *repo) emptyTree(ctx context.Context) (string, error) {
	out, err := r.git(ctx, "hash-object", "-t", "tree", "--stdin")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// revision checks a user-given revision and resolves it to a commit id, so
// nothing user-given reaches git's option parser.
func (r *repo) revision(ctx context.Context, rev string) (string, error) {
	if strings.HasPrefix(rev, "-") {
		return "", op.Errorf(op.KindInvalid, "revision %q starts with '-'", rev).WithHint("give a branch, tag or commit id")
	}
	out, err := r.git(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return "", op.Errorf(op.KindNotFound, "unknown revision %q", rev).WithCategory("revision_not_found")
	}
	return strings.TrimSpace(string(out)), nil
}

// pathspecs turns user paths (relative to the root) into literal pathspecs
// from the top level, refusing any that start with '-' or resolve outside
// the repository.
func (r *repo) pathspecs(paths []string) ([]string, error) {
	var specs []string
	for _, p := range paths {
		if p == "" || strings.HasPrefix(p, "-") {
			return nil, op.Errorf(op.KindInvalid, "path %q is empty or starts with '-'", p).WithHint("prefix it with ./")
		}
		abs := p
		if !filepath.IsAbs(p) {
			abs = filepath.Join(r.root, p)
		}
		if resolved, err := filepath.EvalSymlinks(abs); err == nil {
			abs = resolved
		} else if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
			abs = filepath.Join(dir, filepath.Base(abs)) // a deleted file in an existing directory
		}
		rel, err := filepath.Rel(r.top, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, op.Errorf(op.KindDenied, "path %q is outside the repository %s", p, r.top).WithCategory("outside_root")
		}
		if rel == "." {
			specs = append(specs, ":(top)")
			continue
		}
		specs = append(specs, ":(top,literal)"+filepath.ToSlash(rel))
	}
	return specs, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
