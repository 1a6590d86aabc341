package gitx

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lmtool.dev/lm/pkg/op"
)

// hostileRepo is a repository whose own settings name programs for every
// hook git offers a read command: a file-system monitor, a textconv, an
// external diff and a clean filter (the last marked required, so emptying
// it must not fail the command). Each program leaves a marker file.
func hostileRepo(t *testing.T) (dir, markers string) {
	t.Helper()
	markers = t.TempDir()
	dir = newRepo(t, map[string]string{"a.txt": "one\n", ".gitattributes": "*.txt diff=conv filter=clean\n"})
	marker := func(name string) string { return "touch " + filepath.Join(markers, name) + "; cat" }
	run(t, dir, "config", "core.fsmonitor", "touch "+filepath.Join(markers, "fsmonitor")+"; false")
	run(t, dir, "config", "diff.conv.textconv", marker("textconv"))
	run(t, dir, "config", "diff.external", "touch "+filepath.Join(markers, "external")+"; true")
	run(t, dir, "config", "filter.clean.clean", marker("filter"))
	run(t, dir, "config", "filter.clean.smudge", marker("smudge"))
	run(t, dir, "config", "filter.clean.required", "true")
	run(t, dir, "config", "core.pager", marker("pager"))
	write(t, dir, "a.txt", "one\ntwo\n")
	return dir, markers
}

// lm git on a repository that names programs runs none of them, for every
// task, and still answers.
func TestRepositorySettingsRunNoProgram(t *testing.T) {
	t.Parallel()
	dir, markers := hostileRepo(t)
	for _, task := range []string{"status", "diff", "log", "changed_files"} {
		for _, format := range []string{"summary", "detailed"} {
			d := call(t, Input{TaskType: task, Format: format, Root: dir})
			if task == "diff" && (*d.FilesChanged != 1 || (*d.Changes)[0].Added != 1) {
				t.Errorf("diff %s = %+v", format, *d.Changes)
			}
		}
	}
	if ran, _ := os.ReadDir(markers); len(ran) > 0 {
		t.Errorf("the repository's programs ran: %v", ran)
	}
	// The person who trusts the repository gets plain git's behaviour.
	call(t, Input{TaskType: "diff", Format: "detailed", Root: dir, TrustRepoConfig: true})
	if _, err := os.Stat(filepath.Join(markers, "filter")); err != nil {
		t.Errorf("trust_repo_config did not run the filter: %v", err)
	}
}

// A submodule's own settings run nothing either: git would look inside it
// to see whether its files changed, and there run the clean filter its
// configuration names, under a name the superproject's settings never
// mention — even when .gitmodules asks git to always look.
func TestSubmoduleSettingsRunNoProgram(t *testing.T) {
	t.Parallel()
	markers := t.TempDir()
	sub := newRepo(t, map[string]string{"lib.txt": "one\n", ".gitattributes": "*.txt filter=sub\n"})
	dir := newRepo(t, map[string]string{"a.txt": "a\n"})
	run(t, dir, "submodule", "add", "-q", sub, "vendor/lib")
	run(t, dir, "config", "-f", ".gitmodules", "submodule.vendor/lib.ignore", "none")
	run(t, dir, "commit", "-q", "-am", "add submodule")
	checkout := filepath.Join(dir, "vendor/lib")
	run(t, checkout, "config", "filter.sub.clean", "touch "+filepath.Join(markers, "filter")+"; cat")
	write(t, checkout, "lib.txt", "two\n") // the same size: only its content tells
	for _, task := range []string{"status", "diff", "changed_files"} {
		call(t, Input{TaskType: task, Format: "detailed", Root: dir})
	}
	if ran, _ := os.ReadDir(markers); len(ran) > 0 {
		t.Errorf("the submodule's programs ran: %v", ran)
	}
	// The person who trusts the repository gets plain git's behaviour.
	call(t, Input{TaskType: "status", Root: dir, TrustRepoConfig: true})
	if _, err := os.Stat(filepath.Join(markers, "filter")); err != nil {
		t.Errorf("trust_repo_config did not run the submodule's filter: %v", err)
	}
}

// An agent's paths stay beneath its roots: no paths means its root, not the
// whole repository; and it cannot trust a repository's settings.
func TestAgentIsHeldToItsRoot(t *testing.T) {
	t.Parallel()
	dir := newRepo(t, map[string]string{"sub/in.txt": "in\n", "secret.txt": "secret\n"})
	write(t, dir, "sub/in.txt", "in changed\n")
	write(t, dir, "secret.txt", "secret changed: TOPSECRET\n")
	agent := &op.Env{Caller: op.Caller{Role: op.RoleAgent}, Roots: []string{filepath.Join(dir, "sub")}}
	git := func(in Input) (Data, error) {
		t.Helper()
		if err := in.Validate(); err != nil {
			t.Fatal(err)
		}
		out, err := Git(context.Background(), agent, in)
		if err != nil {
			return Data{}, err
		}
		return *out.Data, nil
	}
	d, err := git(Input{TaskType: "diff", Format: "detailed"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(*d.Patch, "TOPSECRET") || *d.FilesChanged != 1 {
		t.Errorf("an agent rooted in sub/ saw the rest of the repository: %+v", *d.Changes)
	}
	s, err := git(Input{TaskType: "status"})
	if err != nil || len(*s.Modified) != 1 || (*s.Modified)[0] != "sub/in.txt" {
		t.Errorf("status = %+v, %v", s.Modified, err)
	}
	// A link out of the root is a link to git: nothing beyond it is read.
	os.Symlink(dir, filepath.Join(dir, "sub", "up"))
	if d, err := git(Input{TaskType: "diff", Format: "detailed", Paths: []string{"up/secret.txt"}}); err == nil && (*d.FilesChanged != 0 || strings.Contains(*d.Patch, "TOPSECRET")) {
		t.Errorf("through a link: %+v", *d.Changes)
	}
	for _, in := range []Input{
		{TaskType: "diff", Paths: []string{"../secret.txt"}},
		{TaskType: "diff", Paths: []string{filepath.Join(dir, "secret.txt")}},
		{TaskType: "diff", Root: dir},
		{TaskType: "diff", Root: "up"},
	} {
		d, err := git(in)
		if op.KindOf(err) != op.KindDenied {
			t.Errorf("%+v: got %+v, %v; want denied", in, d, err)
		}
	}
	raw := json.RawMessage(`{"task_type": "diff", "trust_repo_config": true}`)
	if _, err := Ops()[0].Call(context.Background(), agent, raw); op.KindOf(err) != op.KindDenied {
		t.Errorf("an agent's trust_repo_config: %v", err)
	}
}
