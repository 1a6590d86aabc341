// Package safegit runs git so that a repository's own configuration cannot
// make it run programs. A repository is data an agent may have written:
// its .git/config can name a program as core.fsmonitor, a hook directory, an
// external diff, a textconv or a clean/smudge filter, and plain `git status`
// or `git diff` would run it. Every git command here overrides those
// settings for the one invocation (git's -c, which child git processes
// inherit), never touching the repository.
package safegit

import (
	"bytes"
	"context"
	"os/exec"
	"strings"

	"lmtool.dev/lm/pkg/op"
)

// base keeps git from running what a repository configures for every
// command: the file-system monitor, hooks, a pager, an external diff and
// signature checks in log.
var base = []string{
	"--no-pager", "--no-optional-locks",
	"-c", "core.fsmonitor=false",
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.pager=cat",
	"-c", "diff.external=",
	"-c", "log.showSignature=false",
}

// Git runs git commands in one repository.
type Git struct {
	dir  string   // -C for every command ("" for the command's working directory)
	opts []string // the options before the command
	// environ is the caller's environment (op.Env.Environ), git's own.
	environ []string
	// trusting runs the repository's programs, as plain git does.
	trusting bool
}

// Trusting runs git as plain git runs, the repository's programs included:
// the person's choice, never an agent's.
func Trusting(dir string, environ []string) *Git {
	return &Git{dir: dir, opts: []string{"--no-optional-locks"}, environ: environ, trusting: true}
}

// Open prepares git for the repository at dir (a worktree or any directory
// in it). Filter drivers have names of the repository's choosing, so their
// settings are read first (reading config runs nothing) and each is emptied.
func Open(ctx context.Context, dir string, environ []string) *Git {
	g := &Git{dir: dir, opts: base, environ: environ}
	out, err := g.Command(ctx, "config", "-z", "--get-regexp", `^filter\..*\.(clean|smudge|process|required)$`).Output()
	if err != nil {
		return g // no such settings (exit 1), or not a repository: nothing to empty
	}
	seen := map[string]bool{}
	opts := append([]string(nil), base...)
	for _, entry := range bytes.Split(out, []byte{0}) {
		key, _, _ := strings.Cut(string(entry), "\n")
		name, ok := strings.CutPrefix(key, "filter.")
		if !ok {
			continue
		}
		name = name[:strings.LastIndexByte(name, '.')]
		if seen[name] {
			continue
		}
		seen[name] = true
		for _, setting := range []string{"clean=", "smudge=", "process=", "required=false"} {
			opts = append(opts, "-c", "filter."+name+"."+setting)
		}
	}
	g.opts = opts
	return g
}

// ForListing prepares git for commands that read no file's content
// (ls-files, rev-parse), which no filter or textconv touches, without
// reading the repository's settings first.
func ForListing(dir string, environ []string) *Git {
	return &Git{dir: dir, opts: base, environ: environ}
}

// Command is git with args, its options first and its environment set for
// machine-readable, prompt-free output.
func (g *Git) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append(g.prefix(), args...)...)
	cmd.Env = op.ChildEnv(g.environ, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	return cmd
}

// DiffOptions are the options diff-like commands (diff, log -p, show) need
// on top: no external diff program, no textconv filter, and no look inside
// submodules (see [Git.StatusOptions]).
func (g *Git) DiffOptions() []string {
	if g.trusting {
		return nil
	}
	return []string{"--no-ext-diff", "--no-textconv", ignoreDirtySubmodules}
}

// StatusOptions are the options git status needs on top: a submodule
// counts as changed when its checked-out commit differs, but git does not
// run inside it to see whether its files changed. There git would read the
// submodule's own configuration, whose filter drivers have names this
// package never saw and so cannot empty: a clean filter there would run.
func (g *Git) StatusOptions() []string {
	if g.trusting {
		return nil
	}
	return []string{ignoreDirtySubmodules}
}

// ignoreDirtySubmodules is given on the command line because it must
// outrank a submodule.NAME.ignore setting in .gitmodules or the
// repository's configuration.
const ignoreDirtySubmodules = "--ignore-submodules=dirty"

func (g *Git) prefix() []string {
	p := append([]string(nil), g.opts...)
	if g.dir != "" {
		p = append(p, "-C", g.dir)
	}
	return p
}
