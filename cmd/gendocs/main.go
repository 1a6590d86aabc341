// Command gendocs writes lm's man pages (man/), shell completions
// (completions/) and the table of who may call what (docs/callers.md) from
// the command tree and the registry. Run it through `make generate`;
// a test fails when the committed files are stale. It is a separate program
// so that the man page renderer is not linked into lm.
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	docs "github.com/urfave/cli-docs/v3"
	ucli "github.com/urfave/cli/v3"

	"lmtool.dev/lm/cli"
	"lmtool.dev/lm/pkg/registry"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	files, err := render()
	if err != nil {
		fmt.Fprintf(os.Stderr, "gendocs: %v\n", err)
		os.Exit(1)
	}
	for name, content := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			err = os.WriteFile(path, content, 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "gendocs: %v\n", err)
			os.Exit(1)
		}
	}
}

// render returns the man pages, completion scripts and callers' table keyed
// by their path in the repository.
func render() (map[string][]byte, error) {
	files := map[string][]byte{"docs/callers.md": registry.CallersDoc()}
	tree := cli.DocsTree(registry.Catalog())
	pages := pageNames(tree)
	root := *tree
	root.Description = strings.TrimSpace(strings.TrimSuffix(root.Description, cli.ExitStatusText))
	page, err := docs.ToManWithSection(&root, 1)
	if err != nil {
		return nil, fmt.Errorf("man page lm.1: %w", err)
	}
	files["man/lm.1"] = []byte(oneDefault(withSections(page, "lm", "lm", &ucli.Command{Name: "lm", ArgsUsage: "COMMAND ..."}, pages)))
	for _, c := range tree.Commands {
		if c.Hidden || c.Name == "help" || c.Name == "completion" {
			continue
		}
		// Each command gets its own page, named as its multi-call link,
		// with the sections every lm command shares.
		group := *c
		group.Name = "lm-" + c.Name
		describeCommands("lm "+c.Name, group.Commands)
		page, err := docs.ToManWithSection(&group, 1)
		if err != nil {
			return nil, fmt.Errorf("man page lm-%s.1: %w", c.Name, err)
		}
		files["man/lm-"+c.Name+".1"] = []byte(oneDefault(withSections(page, group.Name, "lm "+c.Name, c, pages)))
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var out bytes.Buffer
		streams := cli.Streams{In: strings.NewReader(""), Out: &out, Err: io.Discard}
		if code := cli.Run(context.Background(), registry.Catalog(), []string{"lm", "completion", shell}, streams); code != 0 {
			return nil, fmt.Errorf("completion %s: exit %d", shell, code)
		}
		files["completions/lm."+shell] = out.Bytes()
	}
	return files, nil
}

// oneDefault drops the "(default: 0)" the docs renderer adds to a flag
// whose usage already says its real default: lm's number flags default to
// zero and fill in the real value, so the page said both.
func oneDefault(page string) string {
	lines := strings.Split(page, "\n")
	for i, l := range lines {
		if rest, ok := strings.CutSuffix(l, " (default: 0)"); ok && strings.Contains(rest, "(default ") {
			lines[i] = rest
		}
	}
	return strings.Join(lines, "\n")
}

// describeCommands puts each command's description (what it does, its
// examples, its MCP tool) under its summary: the page lists commands by
// summary and flags only, and a man page is where people look for the rest.
func describeCommands(path string, commands []*ucli.Command) {
	for _, c := range commands {
		if c.ArgsUsage != "" || len(c.Commands) == 0 {
			c.Usage += "\n\n    " + usageLine(path+" "+c.Name, c)
		}
		if c.Description != "" {
			c.Usage += "\n\n" + markdown(c.Description)
		}
		describeCommands(path+" "+c.Name, c.Commands)
	}
}

// markdown renders a command's description as the Markdown the man pages
// are made from: indented lines (examples) as code, the rest as prose with
// Markdown's own characters escaped.
func markdown(description string) string {
	lines := strings.Split(description, "\n")
	for i, line := range lines {
		if code, ok := strings.CutPrefix(line, "  "); ok {
			lines[i] = "    " + code
		} else {
			lines[i] = markdownEscaper.Replace(line)
		}
	}
	return strings.Join(lines, "\n")
}

var markdownEscaper = strings.NewReplacer(`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`, "#", `\#`)
