package gitx

import "lmtool.dev/lm/pkg/op"

// Ops is local_git, on the CLI as `lm git status|diff|log|changed-files`.
func Ops() []op.Operation {
	return []op.Operation{
		op.New(op.Meta{
			Name: "local_git", Path: []string{"git"},
			Callers: op.Agents, PersonFields: []string{"trust_repo_config"},
			Summary: "Summarize git state as JSON: status, diff, log, changed-files",
			Description: "Built on git's porcelain v2 and -z outputs, so any file name (spaces, newlines, quotes, non-UTF-8), renames, copies, " +
				"binary files, submodules, an empty repository and a detached HEAD come out right. Diffs leave out lock files (listed in excluded) " +
				"and a detailed diff's patch is cut at --max-bytes with truncated set. Refs and paths starting with '-' or outside the repository are refused. " +
				"Outside a repository it exits 3.",
			Examples: "lm git status\nlm git diff --format detailed --max-bytes 20000\nlm git log --limit 5 --jq '.data.commits[].message' -r\nlm git changed-files --since main",
			Args:     []string{"task_type", "paths"},
			Effect:   op.ReadOnly, Idempotent: true,
		}, Git),
	}
}
