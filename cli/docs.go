package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	docs "github.com/urfave/cli-docs/v3"
)

// GeneratedDocs renders the man pages and shell completions from the
// command tree, keyed by their path in the repository.
func GeneratedDocs() (map[string][]byte, error) {
	files := map[string][]byte{}
	a := &app{streams: Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}, started: time.Now()}
	root := a.root()
	page, err := docs.ToManWithSection(root, 1)
	if err != nil {
		return nil, fmt.Errorf("man page lm.1: %w", err)
	}
	files["man/lm.1"] = []byte(page)
	for _, c := range root.Commands {
		if c.Hidden || c.Name == "help" || c.Name == "completion" || len(c.Commands) == 0 {
			continue
		}
		// Render each group as its own page, named as its multi-call link.
		group := *c
		group.Name = "lm-" + c.Name
		page, err := docs.ToManWithSection(&group, 1)
		if err != nil {
			return nil, fmt.Errorf("man page lm-%s.1: %w", c.Name, err)
		}
		files["man/lm-"+c.Name+".1"] = []byte(page)
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var out bytes.Buffer
		if code := Run(context.Background(), []string{"lm", "completion", shell}, Streams{In: strings.NewReader(""), Out: &out, Err: io.Discard}); code != 0 {
			return nil, fmt.Errorf("completion %s: exit %d", shell, code)
		}
		files["completions/lm."+shell] = out.Bytes()
	}
	return files, nil
}
