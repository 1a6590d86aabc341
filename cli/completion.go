package cli

import (
	"bytes"
	"context"
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
