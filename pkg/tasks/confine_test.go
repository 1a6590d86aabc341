package tasks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lmtool.dev/lm/pkg/op"
)

// An agent's discovery reads its project's files beneath the project: a
// task file linked out of it, or a Makefile or Taskfile including one from
// outside, defines nothing the agent sees, and no problem quotes it. The
// person's project may link anywhere.
func TestAgentsDiscoveryStaysInItsProject(t *testing.T) {
	t.Setenv("PATH", "") // lm's reading of the files, not the runners' listings
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{
		"package.json": `{"scripts": {"stolen-npm": "echo SECRET"}}`,
		"x.mk":         "stolen-make:\n\techo SECRET\n",
		"Taskfile.yml": "version: '3'\ntasks:\n  stolen-task:\n    cmds: [echo SECRET]\n",
		"broken.toml":  "SECRET = = =",
	})
	dir := t.TempDir()
	out := "../" + filepath.Base(outside)
	writeFiles(t, dir, map[string]string{
		"Makefile":     "include " + out + "/x.mk\nown:\n\techo own\n",
		"Taskfile.yml": "version: '3'\nincludes:\n  ext: " + out + "/Taskfile.yml\ntasks:\n  mine:\n    cmds: [echo mine]\n",
	})
	os.Symlink(filepath.Join(outside, "package.json"), filepath.Join(dir, "package.json"))
	os.Symlink(filepath.Join(outside, "broken.toml"), filepath.Join(dir, "mise.toml"))

	agent := &op.Env{Caller: op.Caller{Role: op.RoleAgent}, Roots: []string{dir}}
	list, err := List(context.Background(), agent, ListInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, task := range list.Tasks {
		names = append(names, task.Name)
	}
	got := strings.Join(names, " ")
	if strings.Contains(got, "stolen") || !strings.Contains(got, "own") || !strings.Contains(got, "mine") {
		t.Errorf("an agent's tasks: %s", got)
	}
	if problems := strings.Join(list.Problems, "\n"); strings.Contains(problems, "SECRET") {
		t.Errorf("a problem quotes a file outside: %s", problems)
	}
	if _, _, err := FindFor(agent, "", "stolen-npm"); op.KindOf(err) != op.KindNotFound {
		t.Errorf("find stolen-npm: %v", err)
	}

	person := &op.Env{Caller: op.Person()}
	mine, err := List(context.Background(), person, ListInput{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, task := range mine.Tasks {
		all = append(all, task.Name)
	}
	if got := strings.Join(all, " "); !strings.Contains(got, "stolen-npm") || !strings.Contains(got, "stolen-make") {
		t.Errorf("the person's tasks: %s", got)
	}
}
