package cli

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v3"
)

// configureCompletion shows `lm completion SHELL` in help and makes the bash
// script work without the bash-completion package: urfave/cli's script
// gives up when neither of that package's word splitters is defined, and
// bash's own COMP_WORDS is all it needs then.
func configureCompletion(c *ucli.Command) {
	c.Hidden = false
	bash := c.Command("bash")
	if bash == nil {
		return
	}
	generate := bash.Action
	bash.Action = func(ctx context.Context, cmd *ucli.Command) error {
		root := cmd.Root()
		out := root.Writer
		var script bytes.Buffer
		root.Writer = &script
		err := generate(ctx, cmd)
		root.Writer = out
		if err != nil {
			return err
		}
		_, err = out.Write([]byte(strings.Replace(script.String(), bashWordSplitter, bashWordSplitterFallback, 1)))
		return err
	}
}

const bashWordSplitter = `  else
    _get_comp_words_by_ref "$@" cur prev words cword
  fi`

const bashWordSplitterFallback = `  elif declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
    _get_comp_words_by_ref "$@" cur prev words cword
  else
    return 0 # without bash-completion, bash's own COMP_WORDS and COMP_CWORD serve
  fi`

// completionRequest is the flag urfave/cli's completion scripts append to
// the words before the cursor.
const completionRequest = "--generate-shell-completion"

// suggest completes a leaf command's next word with what exists: after a
// flag with fixed values (--status), those values; after "-", the flags;
// else the next positional argument's values, fixed (lm git's task types)
// or current (task names, job ids, server names, pending instruction ids).
func (a *app) suggest(l leaf) ucli.ShellCompleteFunc {
	return func(ctx context.Context, cmd *ucli.Command) {
		words := slices.DeleteFunc(slices.Clone(a.args[1:]), func(w string) bool { return w == completionRequest })
		last := ""
		if len(words) > 0 {
			last = words[len(words)-1]
		}
		if flag, ok := strings.CutPrefix(last, "-"); ok {
			field := strings.ReplaceAll(strings.TrimLeft(flag, "-"), "-", "_")
			if values := a.values(ctx, cmd, l, field); len(values) > 0 {
				printWords(cmd, values)
				return
			}
			ucli.DefaultCompleteWithFlags(ctx, cmd)
			return
		}
		args := l.op.Info().Args
		if given := cmd.Args().Len(); given < len(args) {
			printWords(cmd, a.values(ctx, cmd, l, args[given]))
		}
	}
}

// values are what an input field may be: its schema's enum, else what the
// operation suggests from the store and the project.
func (a *app) values(ctx context.Context, cmd *ucli.Command, l leaf, field string) []string {
	prop := l.op.InputSchema().Properties[field]
	if prop == nil {
		return nil
	}
	if len(prop.Enum) > 0 {
		values := make([]string, len(prop.Enum))
		for i, v := range prop.Enum {
			values[i] = fmt.Sprint(v)
		}
		return values
	}
	env, err := a.env(cmd)
	if err != nil {
		return nil
	}
	return l.op.Suggest(ctx, env, field)
}

func printWords(cmd *ucli.Command, words []string) {
	for _, w := range words {
		fmt.Fprintln(cmd.Root().Writer, w)
	}
}
