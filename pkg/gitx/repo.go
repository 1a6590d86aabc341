// Package gitx answers questions about a git repository (status, diff, log,
// changed files) as structured data, from the git binary's porcelain and -z
// outputs. Git runs with argv only (never a shell), with the repository's
// programs (fsmonitor, hooks, filters, external diffs) turned off, and refs
// or paths that could be read as options, or that leave the repository (an
// agent's: its root), are refused.
package gitx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"lmtool.dev/lm/pkg/confine"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/safegit"
)

// repo is a repository lm runs git in.
type repo struct {
	g    *safegit.Git
	top  string // the worktree's top level, symlinks resolved
	root string // the root user paths are relative to, symlinks resolved
	// confined holds a caller other than the person to the root: paths
	// outside it are refused and no paths means the root, not the
	// whole repository.
	confined bool
}

// openRepo finds the repository containing the root. Git first runs in the
// directory the root opened (through its descriptor, so the directory
// checked is the one git sees); with trust it runs the programs the
// repository's settings name, as plain git does.
func openRepo(ctx context.Context, environ []string, root *confine.Root, confined, trust bool) (*repo, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, op.Errorf(op.KindUnavailable, "git is not installed: %v", err).WithCategory("git_unavailable")
	}
	dir, err := root.OpenDir(".")
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	var stdout bytes.Buffer
	cmd := safegit.ForListing("", environ).Command(ctx, "rev-parse", "--show-toplevel")
	cmd.Dir, cmd.Stdout = confine.ProcPath(dir), &stdout
	err = cmd.Run()
	if ctx.Err() != nil {
		return nil, ctx.Err() // cancelled: say so, not "not a repository"
	}
	if err != nil {
		return nil, op.Errorf(op.KindNotFound, "not a git repository: %s", root.Dir).
			WithCategory("not_a_repository").WithHint("run it inside a git worktree, or pass --root DIR")
	}
	top := strings.TrimSuffix(stdout.String(), "\n")
	if resolved, err := filepath.EvalSymlinks(top); err == nil {
		top = resolved
	}
	if _, inside := relativeTo(top, root.Dir); confined && !inside {
		// A .git file or core.worktree naming a worktree elsewhere.
		return nil, op.Errorf(op.KindDenied, "the worktree of %s is %s, outside it", root.Dir, top).WithCategory("outside_root")
	}
	// Run from the top level from now on, so every path git prints is
	// relative to it (status would otherwise print them relative to dir).
	r := &repo{top: top, root: root.Dir, confined: confined, g: safegit.Open(ctx, top, environ)}
	if trust {
		r.g = safegit.Trusting(top, environ)
	}
	return r, nil
}

// git runs git with args in the repository and returns its stdout.
func (r *repo) git(ctx context.Context, args ...string) ([]byte, error) {
	cmd := r.g.Command(ctx, args...)
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
// the repository, or, for a confined caller, outside the root, whose
// pathspec is then the default.
func (r *repo) pathspecs(paths []string) ([]string, error) {
	bound, boundName := r.top, "the repository"
	if r.confined {
		bound, boundName = r.root, "the root"
		if len(paths) == 0 && r.root != r.top {
			paths = []string{r.root}
		}
	}
	var specs []string
	for _, p := range paths {
		if p == "" || strings.HasPrefix(p, "-") {
			return nil, op.Errorf(op.KindInvalid, "path %q is empty or starts with '-'", p).WithHint("prefix it with ./")
		}
		abs := p
		if !filepath.IsAbs(p) {
			abs = filepath.Join(r.root, p)
		}
		abs = filepath.Clean(abs)
		if !r.confined { // the person's links are followed, as their shell would
			if resolved, err := filepath.EvalSymlinks(abs); err == nil {
				abs = resolved
			} else if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
				abs = filepath.Join(dir, filepath.Base(abs)) // a deleted file in an existing directory
			}
		}
		if _, inside := relativeTo(bound, abs); !inside {
			return nil, op.Errorf(op.KindDenied, "path %q is outside %s %s", p, boundName, bound).WithCategory("outside_root")
		}
		rel, _ := relativeTo(r.top, abs)
		if rel == "." {
			specs = append(specs, ":(top)")
			continue
		}
		specs = append(specs, ":(top,literal)"+filepath.ToSlash(rel))
	}
	return specs, nil
}

// relativeTo returns path relative to dir when it is dir or below it.
func relativeTo(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
