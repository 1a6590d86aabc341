package tasks

import (
	"slices"
	"testing"
)

// Each runner gets extra words where it hands them to the task; the rule
// per runner is the one README.md states.
func TestWithArgsPlacesWordsPerRunner(t *testing.T) {
	args := []string{"--flag", "-x"}
	for _, tc := range []struct {
		runner string
		argv   []string
		want   []string
		words  bool // the words reach the runner itself
	}{
		{"npm", []string{"npm", "run", "show"}, []string{"npm", "run", "show", "--", "--flag", "-x"}, false},
		{"pnpm", []string{"pnpm", "run", "show"}, []string{"pnpm", "run", "show", "--flag", "-x"}, false},
		{"yarn", []string{"yarn", "run", "show"}, []string{"yarn", "run", "show", "--flag", "-x"}, false},
		{"bun", []string{"bun", "run", "show"}, []string{"bun", "run", "show", "--flag", "-x"}, false},
		{"deno", []string{"deno", "task", "show"}, []string{"deno", "task", "show", "--flag", "-x"}, false},
		{"task", []string{"task", "show"}, []string{"task", "show", "--", "--flag", "-x"}, false},
		{"mise", []string{"mise", "run", "show"}, []string{"mise", "run", "show", "--", "--flag", "-x"}, false},
		{"just", []string{"just", "show"}, []string{"just", "--one", "show", "--flag", "-x"}, false},
		{"cargo", []string{"cargo", "show"}, []string{"cargo", "show", "--", "--flag", "-x"}, false},
		{"cargo-make", []string{"cargo", "make", "show"}, []string{"cargo", "make", "show", "--flag", "-x"}, false},
		{"turbo", []string{"turbo", "run", "show"}, []string{"turbo", "run", "show", "--", "--flag", "-x"}, false},
		{"uv", []string{"uv", "run", "show"}, []string{"uv", "run", "show", "--flag", "-x"}, false},
		{"poetry", []string{"poetry", "run", "show"}, []string{"poetry", "run", "show", "--flag", "-x"}, false},
		{"sh", []string{"./show.sh"}, []string{"./show.sh", "--flag", "-x"}, false},
		{"make", []string{"make", "show"}, []string{"make", "show", "--flag", "-x"}, true},
		{"mvn", []string{"./mvnw", "test"}, []string{"./mvnw", "test", "--flag", "-x"}, true},
		{"gradle", []string{"./gradlew", "test"}, []string{"./gradlew", "test", "--flag", "-x"}, true},
		{"a-runner-lm-does-not-know", []string{"x"}, []string{"x", "--flag", "-x"}, true},
	} {
		t.Run(tc.runner, func(t *testing.T) {
			task := Task{Runner: tc.runner, Argv: tc.argv}
			if got := task.WithArgs(args); !slices.Equal(got, tc.want) {
				t.Errorf("%s: %q, want %q", tc.runner, got, tc.want)
			}
			if got := task.WithArgs(nil); !slices.Equal(got, tc.argv) {
				t.Errorf("%s without words: %q", tc.runner, got)
			}
			if task.ArgsAreRunnerWords() != tc.words {
				t.Errorf("%s: runner words %v, want %v", tc.runner, !tc.words, tc.words)
			}
		})
	}
}
