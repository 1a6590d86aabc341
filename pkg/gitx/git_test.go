package gitx

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lmtool.dev/lm/pkg/op"
)

// newRepo makes a repository with one commit of the given files. Every test
// makes its own repositories and environment, so the tests run in parallel.
func newRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	run(t, dir, "init", "-q", "-b", "main")
	for name, body := range files {
		write(t, dir, name, body)
	}
	if len(files) > 0 {
		run(t, dir, "add", "-A")
		run(t, dir, "commit", "-q", "-m", "first commit", "-m", "the body")
	}
	return dir
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "protocol.file.allow=always"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func call(t *testing.T, in Input) Data {
	t.Helper()
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	out, err := Git(context.Background(), &op.Env{Caller: op.Person()}, in)
	if err != nil {
		t.Fatalf("%s: %v", in.TaskType, err)
	}
	if !out.Success || out.Confidence != 1 {
		t.Fatalf("envelope: %+v", out)
	}
	return *out.Data
}

func TestStatusUnusualNames(t *testing.T) {
	t.Parallel()
	names := []string{"with space.txt", "new\nline.txt", `quote"d.txt`, "tab\tbed.txt", "caf\xe9.txt", " leading.txt", "trailing.txt "}
	files := map[string]string{}
	for _, n := range names {
		files[n] = "one\n"
	}
	dir := newRepo(t, files)
	for _, n := range names {
		write(t, dir, n, "one\ntwo\n")
	}
	write(t, dir, "dir/untracked file\n", "x")
	d := call(t, Input{TaskType: "status", Root: dir, Format: "detailed"})
	want := slices.Clone(names)
	slices.Sort(want)
	if !slices.Equal(*d.Modified, want) {
		t.Errorf("modified = %q, want %q", *d.Modified, want)
	}
	if !slices.Equal(*d.Untracked, []string{"dir/untracked file\n"}) {
		t.Errorf("untracked = %q", *d.Untracked)
	}
	var b64 int
	for _, e := range *d.Entries {
		if e.PathBase64 != "" {
			b64++
			if e.PathBase64 != base64Of("caf\xe9.txt") {
				t.Errorf("path_base64 = %s", e.PathBase64)
			}
		}
	}
	if b64 != 1 {
		t.Errorf("%d entries carry path_base64, want 1", b64)
	}
	if d.Branch.Head != "main" || d.Branch.Detached || len(d.Branch.Commit) < 40 {
		t.Errorf("branch = %+v", d.Branch)
	}
}

func TestStatusRenameStagedAndBinary(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, map[string]string{"old name.txt": "hello world, long enough to be similar\n", "img.bin": "\x00\x01\x02"})
	run(t, dir, "mv", "old name.txt", "new name.txt")
	write(t, dir, "img.bin", "\x00\x01\x03\x04")
	write(t, dir, "added.txt", "a\n")
	run(t, dir, "add", "added.txt", "img.bin")
	d := call(t, Input{TaskType: "status", Root: dir})
	if want := []Rename{{From: "old name.txt", To: "new name.txt", Kind: "rename", Score: 100}}; !slices.Equal(*d.Renamed, want) {
		t.Errorf("renamed = %+v", *d.Renamed)
	}
	if want := []string{"added.txt", "img.bin", "new name.txt"}; !slices.Equal(*d.Staged, want) {
		t.Errorf("staged = %q, want %q", *d.Staged, want)
	}
	diff := call(t, Input{TaskType: "diff", Root: dir, Staged: true})
	var sawBinary, sawRename bool
	for _, c := range *diff.Changes {
		sawBinary = sawBinary || (c.File == "img.bin" && c.Binary)
		sawRename = sawRename || (c.File == "new name.txt" && c.From == "old name.txt")
	}
	if !sawBinary || !sawRename || *diff.FilesChanged != 3 {
		t.Errorf("diff changes = %+v", *diff.Changes)
	}
}

func TestEmptyRepository(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, nil)
	d := call(t, Input{TaskType: "status", Root: dir})
	if d.Branch.Commit != "" || !*d.Clean {
		t.Errorf("status = %+v %+v", d.Branch, d)
	}
	if l := call(t, Input{TaskType: "log", Root: dir}); len(*l.Commits) != 0 {
		t.Errorf("log = %+v", *l.Commits)
	}
	write(t, dir, "a.txt", "a\nb\n")
	run(t, dir, "add", "a.txt")
	diff := call(t, Input{TaskType: "diff", Root: dir})
	if *diff.Insertions != 2 || *diff.FilesChanged != 1 {
		t.Errorf("diff against the empty tree = %+v", *diff.Changes)
	}
	cf := call(t, Input{TaskType: "changed_files", Root: dir})
	if want := []ChangedFile{{Path: "a.txt", Status: "added"}}; !slices.Equal(*cf.Files, want) {
		t.Errorf("changed files = %+v", *cf.Files)
	}
}

func TestDetachedHeadLogAndSince(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, map[string]string{"a.txt": "a\n"})
	first := run(t, dir, "rev-parse", "HEAD")
	write(t, dir, "b.txt", "b\n")
	run(t, dir, "add", "b.txt")
	run(t, dir, "commit", "-q", "-m", "second")
	run(t, dir, "checkout", "-q", "--detach", "HEAD")
	d := call(t, Input{TaskType: "status", Root: dir})
	if !d.Branch.Detached || d.Branch.Head != "" {
		t.Errorf("branch = %+v", d.Branch)
	}
	l := call(t, Input{TaskType: "log", Root: dir, Format: "detailed"})
	if len(*l.Commits) != 2 || (*l.Commits)[0].Message != "second" || (*l.Commits)[1].Body != "the body" || (*l.Commits)[1].Author != "Ada" {
		t.Errorf("log = %+v", *l.Commits)
	}
	if l := call(t, Input{TaskType: "log", Root: dir, Limit: 1}); len(*l.Commits) != 1 {
		t.Errorf("limit 1 gave %d commits", len(*l.Commits))
	}
	if l := call(t, Input{TaskType: "log", Root: dir, Since: first}); len(*l.Commits) != 1 {
		t.Errorf("since first gave %d commits", len(*l.Commits))
	}
	cf := call(t, Input{TaskType: "changed-files", Root: dir, Since: first})
	if want := []ChangedFile{{Path: "b.txt", Status: "added"}}; !slices.Equal(*cf.Files, want) {
		t.Errorf("changed since first = %+v", *cf.Files)
	}
}

func TestDiffLockFilesAndTruncation(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, map[string]string{"main.go": "package main\n", "sub/package-lock.json": "{}\n"})
	write(t, dir, "main.go", "package main\n"+strings.Repeat("// a comment line\n", 200))
	write(t, dir, "sub/package-lock.json", "{\"x\": 1}\n")
	d := call(t, Input{TaskType: "diff", Root: dir, Format: "detailed", MaxBytes: 500})
	if !slices.Equal(*d.Excluded, []string{"sub/package-lock.json"}) || *d.FilesChanged != 1 || *d.Insertions != 200 {
		t.Errorf("diff = %+v excluded %q", *d.Changes, *d.Excluded)
	}
	if !*d.Truncated || len(*d.Patch) > 500 || strings.Contains(*d.Patch, "package-lock") {
		t.Errorf("patch (%d bytes, truncated %v):\n%s", len(*d.Patch), *d.Truncated, *d.Patch)
	}
	all := call(t, Input{TaskType: "diff", Root: dir, IncludeLockFiles: true, Paths: []string{"sub"}})
	if *all.FilesChanged != 1 || (*all.Changes)[0].File != "sub/package-lock.json" {
		t.Errorf("diff with lock files, limited to sub = %+v", *all.Changes)
	}
}

func TestSubmoduleAndWorktree(t *testing.T) {
	t.Parallel()
	sub := newRepo(t, map[string]string{"lib.txt": "lib\n"})
	dir := newRepo(t, map[string]string{"a.txt": "a\n"})
	run(t, dir, "submodule", "add", "-q", sub, "vendor/lib")
	run(t, dir, "commit", "-q", "-m", "add submodule")
	write(t, filepath.Join(dir, "vendor/lib"), "lib.txt", "changed\n")
	run(t, filepath.Join(dir, "vendor/lib"), "commit", "-q", "-am", "a new commit in the submodule")
	d := call(t, Input{TaskType: "status", Root: dir, Format: "detailed"})
	if len(*d.Entries) != 1 || !(*d.Entries)[0].Submodule || (*d.Entries)[0].Path != "vendor/lib" {
		t.Errorf("entries = %+v", *d.Entries)
	}
	wt := filepath.Join(t.TempDir(), "linked")
	run(t, dir, "worktree", "add", "-q", "-b", "side", wt)
	write(t, wt, "a.txt", "changed in the worktree\n")
	d = call(t, Input{TaskType: "status", Root: filepath.Join(wt, "vendor")})
	if d.Branch.Head != "side" || !slices.Equal(*d.Modified, []string{"a.txt"}) {
		t.Errorf("linked worktree status = %+v %q", d.Branch, *d.Modified)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, map[string]string{"a.txt": "a\n"})
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in   Input
		kind op.Kind
	}{
		{Input{TaskType: "log", Root: dir, Since: "--output=/tmp/x"}, op.KindInvalid},
		{Input{TaskType: "diff", Root: dir, Since: "no-such-branch"}, op.KindNotFound},
		{Input{TaskType: "status", Root: dir, Paths: []string{"-a"}}, op.KindInvalid},
		{Input{TaskType: "status", Root: dir, Paths: []string{"../elsewhere"}}, op.KindDenied},
		{Input{TaskType: "status", Root: dir, Paths: []string{"link/file"}}, op.KindDenied},
		{Input{TaskType: "status", Root: outside}, op.KindNotFound},
	} {
		in := tc.in
		if err := in.Validate(); err != nil {
			t.Fatal(err)
		}
		_, err := Git(context.Background(), &op.Env{Caller: op.Person()}, in)
		if op.KindOf(err) != tc.kind {
			t.Errorf("%+v: got %v (kind %d), want kind %d", tc.in, err, op.KindOf(err), tc.kind)
		}
	}
}

// A copy (git finds it with -C when the source changed too) is reported with
// its source in diff and changed_files; a name that is not UTF-8 keeps its
// exact bytes in path_base64.
func TestCopiesAndNonUTF8InDiffAndChangedFiles(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("a line that makes the file long enough to compare\n", 20)
	dir := newRepo(t, map[string]string{"orig.txt": body})
	write(t, dir, "copy.txt", body)
	write(t, dir, "orig.txt", body+"one more\n")
	write(t, dir, "caf\xe9.txt", "x\n")
	run(t, dir, "add", "-A")
	cf := call(t, Input{TaskType: "changed_files", Root: dir})
	want := []ChangedFile{
		{Path: "caf\xe9.txt", Status: "added", PathBase64: base64Of("caf\xe9.txt")},
		{Path: "copy.txt", Status: "copied", From: "orig.txt"},
		{Path: "orig.txt", Status: "modified"},
	}
	if !slices.Equal(*cf.Files, want) {
		t.Errorf("changed files = %+v", *cf.Files)
	}
	d := call(t, Input{TaskType: "diff", Root: dir})
	var sawCopy, sawBytes bool
	for _, c := range *d.Changes {
		sawCopy = sawCopy || (c.File == "copy.txt" && c.From == "orig.txt" && c.Added == 0)
		sawBytes = sawBytes || (c.PathBase64 == base64Of("caf\xe9.txt"))
	}
	if !sawCopy || !sawBytes || *d.FilesChanged != 3 {
		t.Errorf("diff changes = %+v", *d.Changes)
	}
}
