package tasks

import "slices"

// handOff is how a runner hands the words after a task's name to the task.
type handOff int

const (
	// afterSeparator: RUNNER … NAME -- ARGS. The runner reads options up to
	// "--" and gives the task everything after it, options included.
	afterSeparator handOff = iota
	// afterName: the runner stops reading its own options at the task's
	// name and gives the task every word after it.
	afterName
	// runnerWords: there is no such boundary. Extra words are the
	// runner's own: more targets or goals, variable assignments, options.
	runnerWords
)

// handOffs is each runner's rule, checked against the real binary where it
// is installed for the tests (npm, make, cargo, mvn, just, mise, task) and
// taken from the runner's documentation otherwise. README.md lists them.
var handOffs = map[string]handOff{
	"npm":            afterSeparator, // npm run NAME -- ARGS (npm ≥ 7 reads options after NAME)
	"task":           afterSeparator, // task NAME -- ARGS, as {{.CLI_ARGS}}
	"mise":           afterSeparator, // mise run NAME -- ARGS (":::" would start another task)
	"cargo":          afterSeparator, // cargo ALIAS -- ARGS (--config, --manifest-path before it are cargo's)
	"turbo":          afterSeparator, // turbo run NAME -- ARGS
	"pnpm":           afterName,      // pnpm ≥ 7 passes every word after the script's name (pnpm/pnpm#4290)
	"yarn":           afterName,      // yarn 1 and berry: yarn run NAME ARGS
	"bun":            afterName,      // bun run NAME ARGS: bun's flags go before the name
	"deno":           afterName,      // deno task NAME ARGS
	"uv":             afterName,      // uv run COMMAND ARGS
	"poetry":         afterName,      // poetry run COMMAND ARGS (since 1.0; python-poetry/poetry#1500)
	"pdm":            afterName,      // pdm run SCRIPT ARGS
	"hatch":          afterName,      // hatch run SCRIPT ARGS
	"poe":            afterName,      // poe TASK ARGS
	"cargo-make":     afterName,      // cargo make TASK ARGS, as CARGO_MAKE_TASK_ARGS
	"sh":             afterName,      // ./script.sh ARGS
	"just":           afterName,      // just --one RECIPE ARGS: --one refuses a second recipe
	"make":           runnerWords,    // targets, VAR=value, --eval, -f, -C
	"mvn":            runnerWords,    // goals, -D, -f
	"gradle":         runnerWords,    // tasks, -I init scripts, -D
	"cmake":          runnerWords,    // cmake --build … -- hands words to the build tool
	"act":            runnerWords,    // events and options
	"docker compose": runnerWords,    // options and services
}

// ArgsAreRunnerWords reports whether extra words would reach the task's
// runner rather than the task: then only a person, or an allowlist entry's
// args patterns, may give them.
func (t Task) ArgsAreRunnerWords() bool { return ruleOf(t.Runner) == runnerWords }

func ruleOf(runner string) handOff {
	if rule, ok := handOffs[runner]; ok {
		return rule
	}
	return runnerWords // a runner without a known rule gets no say from an agent
}

// WithArgs returns the argument vector that runs t with extra arguments,
// placed where the runner hands them to the task. Arguments are separate
// words, never joined into a shell string, so metacharacters in them are
// inert.
func (t Task) WithArgs(args []string) []string {
	argv := slices.Clone(t.Argv)
	if len(args) == 0 {
		return argv
	}
	switch ruleOf(t.Runner) {
	case afterSeparator:
		argv = append(argv, "--")
	case afterName:
		if t.Runner == "just" {
			argv = slices.Insert(argv, 1, "--one")
		}
	}
	return append(argv, args...)
}
