package tasks

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"lmtool.dev/lm/pkg/op"
)

// Extras are what an agent hands an allowed task: its words, environment
// and working directory.
type Extras struct {
	Args []string
	Env  map[string]string
	// Dir is the working directory, absolute with symlinks resolved.
	Dir string
}

// AgentMayRun decides on what comes with a task an allowlist entry allows,
// so that the task runs its own recipe only. Refused unless the entry
// permits them: words a runner reads itself (make's targets, VAR=value and
// options; see [Task.ArgsAreRunnerWords]), any environment variable (names
// such as MAKEFLAGS, npm_config_*, NODE_OPTIONS, LD_PRELOAD or BASH_ENV are
// options or code to the runner, and no list of them is complete), and a
// working directory other than the task file's, where the runner may read
// another file that defines the same name.
func AgentMayRun(t Task, e Entry, x Extras) error {
	if t.ArgsAreRunnerWords() {
		for _, a := range x.Args {
			if !slices.ContainsFunc(e.Args, func(p string) bool { return globMatch(p, a) }) {
				return refuse(t, fmt.Sprintf("%q would reach %s itself, not the task (%s reads extra words as targets, assignments or options)", a, t.Runner, t.Runner),
					fmt.Sprintf("args = [%q]", a))
			}
		}
	}
	names := make([]string, 0, len(x.Env))
	for k := range x.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !slices.Contains(e.Env, k) {
			return refuse(t, fmt.Sprintf("the environment variable %s may change what %s runs", k, t.Runner), fmt.Sprintf("env = [%q]", k))
		}
	}
	home := canonical(filepath.Dir(t.FilePath))
	if x.Dir != "" && x.Dir != home {
		rel, err := filepath.Rel(home, x.Dir)
		if err != nil || !slices.ContainsFunc(e.Cwd, func(c string) bool { return filepath.Clean(c) == rel }) {
			return refuse(t, fmt.Sprintf("in %s, %s may read another file than %s", x.Dir, t.Runner, t.FilePath), fmt.Sprintf("cwd = [%q]", rel))
		}
	}
	return nil
}

func refuse(t Task, why, field string) error {
	return op.Errorf(op.KindDenied, "task %s: %s", t.Name, why).WithCategory("denied").
		WithHint("only a person can permit it, with %s in the task's entry of the MCP allowlist; or call run_task without it", field)
}

// globMatch matches a word against a pattern where * stands for any run of
// characters (slashes included) but $ and `, and everything else for
// itself: the person who permitted TESTS=unit* did not permit
// TESTS=unit$(shell …), which make would expand.
func globMatch(pattern, word string) bool {
	parts := strings.Split(pattern, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("(?s)^" + strings.Join(parts, "[^$`]*") + "$").MatchString(word)
}
