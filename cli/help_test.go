package cli_test

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v3"

	"lmtool.dev/lm/cli"
	"lmtool.dev/lm/pkg/registry"
)

// Every command and flag in help says what it is, once: no empty
// description, and no phrase said twice in a row ("(repeatable)
// (repeatable)").
func TestHelpTextsAreNonEmptyAndSayThingsOnce(t *testing.T) {
	var check func(c *ucli.Command, name string)
	check = func(c *ucli.Command, name string) {
		if c.Hidden || c.Name == "help" {
			return
		}
		for _, sub := range c.Commands {
			check(sub, name+" "+sub.Name)
		}
		if strings.TrimSpace(c.Usage) == "" {
			t.Errorf("%s has no description", name)
		}
		for what, text := range map[string]string{"description": c.Usage, "long description": c.Description} {
			for _, line := range strings.Split(text, "\n") { // examples repeat the command, a line each
				if p := repeatedPhrase(line); p != "" {
					t.Errorf("%s's %s says %q twice in a row: %q", name, what, p, line)
				}
			}
		}
		for _, f := range c.VisibleFlags() {
			usage := ""
			if d, ok := f.(ucli.DocGenerationFlag); ok {
				usage = d.GetUsage()
			}
			if strings.TrimSpace(usage) == "" {
				t.Errorf("%s --%s has no description", name, f.Names()[0])
			}
			if p := repeatedPhrase(usage); p != "" {
				t.Errorf("%s --%s says %q twice in a row: %q", name, f.Names()[0], p, usage)
			}
		}
	}
	check(cli.DocsTree(registry.Catalog()), "lm")
}

// repeatedPhrase is the first run of one to eight words said twice in a
// row within a sentence, ignoring case and punctuation at the words' ends;
// "" if none.
func repeatedPhrase(text string) string {
	var sentence []string
	for _, w := range strings.Fields(strings.ToLower(text)) {
		sentence = append(sentence, strings.Trim(w, ".,;:!?()"))
		if strings.ContainsAny(w[len(w)-1:], ".;!?") {
			if p := repeatIn(sentence); p != "" {
				return p
			}
			sentence = nil
		}
	}
	return repeatIn(sentence)
}

func repeatIn(words []string) string {
	for n := 1; n <= 8; n++ {
		for i := 0; i+2*n <= len(words); i++ {
			if words[i] != "" && slices.Equal(words[i:i+n], words[i+n:i+2*n]) {
				return strings.Join(words[i:i+n], " ")
			}
		}
	}
	return ""
}

func TestRepeatedPhrase(t *testing.T) {
	for text, want := range map[string]string{
		"values (repeatable) (repeatable)":                                "repeatable",
		"transport error: failed to send request: failed to send request": "failed to send request",
		"the the end":                      "the",
		"add it, then list, run or remove": "",
		"NAME=VALUE (repeatable)":          "",
		"Needs npm. npm runs no scripts":   "",
	} {
		if got := repeatedPhrase(text); got != want {
			t.Errorf("repeatedPhrase(%q) = %q, want %q", text, got, want)
		}
	}
}

// Every line of the README's shell examples that runs lm still parses: its
// command exists and each flag it gives is one that command (or lm itself)
// takes.
func TestREADMECommandsParse(t *testing.T) {
	f, err := os.Open("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	root := cli.DocsTree(registry.Catalog())
	lines, inShell, checked := bufio.NewScanner(f), false, 0
	for n := 1; lines.Scan(); n++ {
		line := lines.Text()
		switch {
		case strings.HasPrefix(line, "```"):
			lang := strings.TrimPrefix(line, "```")
			inShell = !inShell && (lang == "sh" || lang == "bash" || lang == "console" || lang == "shell")
			continue
		case !inShell:
			continue
		}
		for _, words := range lmInvocations(line) {
			checked++
			if problem := parses(root, words); problem != "" {
				t.Errorf("README.md:%d: %s\n\t%s", n, problem, line)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d lm command lines found in README.md's shell blocks", checked)
	}
}

// Every example in a command's help still parses, as the README's do.
func TestHelpExamplesParse(t *testing.T) {
	root := cli.DocsTree(registry.Catalog())
	checked := 0
	var walk func(c *ucli.Command, name string)
	walk = func(c *ucli.Command, name string) {
		for _, sub := range c.Commands {
			walk(sub, name+" "+sub.Name)
		}
		for _, line := range examples(c.Description) {
			for _, words := range lmInvocations(line) {
				checked++
				if problem := parses(root, words); problem != "" {
					t.Errorf("%s --help: %s\n\t%s", name, problem, line)
				}
			}
		}
	}
	walk(root, "lm")
	if checked < 50 {
		t.Fatalf("only %d lm command lines found in the help's examples", checked)
	}
}

// examples are the lines of a description's EXAMPLES block.
func examples(description string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(description, "\n") {
		switch {
		case line == "EXAMPLES":
			in = true
		case in && strings.HasPrefix(line, "  "):
			out = append(out, strings.TrimSpace(line))
		default:
			in = false
		}
	}
	return out
}

// lmInvocations are the words of each lm command on a shell line: after
// the start of the line, a pipe, ;, && or ||, or $( — up to where that
// command ends. A # starts a comment outside quotes.
func lmInvocations(line string) [][]string {
	var out [][]string
	var cur []string
	inLM, start := false, true
	flush := func() {
		if inLM {
			out = append(out, cur)
		}
		cur, inLM, start = nil, false, true
	}
	for _, w := range shellWords(line) {
		switch {
		case w == "#":
			flush()
			return out
		case w == "|" || w == ";" || w == "&&" || w == "||" || w == "$(" || w == ")" || w == "&":
			flush()
			continue
		case start:
			start = false
			inLM = w == "lm"
			if strings.Contains(w, "=") && !strings.HasPrefix(w, "-") { // VAR=value lm …
				start = true
			}
			continue
		}
		if inLM && (strings.HasPrefix(w, ">") || strings.HasPrefix(w, "<") || strings.HasPrefix(w, "2>")) {
			// A redirection ends the words lm parses, its target included.
			out = append(out, cur)
			cur, inLM = nil, false
			continue
		}
		if inLM {
			cur = append(cur, w)
		}
	}
	flush()
	return out
}

// shellWords splits a line as the shell would, roughly: quotes group words,
// and the operators that end a command are words of their own.
func shellWords(line string) []string {
	var words []string
	var b strings.Builder
	quote, inWord := rune(0), false
	emit := func() {
		if inWord {
			words = append(words, b.String())
		}
		b.Reset()
		inWord = false
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				b.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			emit()
		case r == '#' && !inWord:
			emit()
			words = append(words, "#")
			return words
		case r == '$' && i+1 < len(rs) && rs[i+1] == '(':
			emit()
			words = append(words, "$(")
			i++
		case r == '|' || r == ';' || r == '&' || r == ')':
			emit()
			op := string(r)
			if i+1 < len(rs) && (rs[i+1] == r) {
				op += string(r)
				i++
			}
			words = append(words, op)
		default:
			b.WriteRune(r)
			inWord = true
		}
	}
	emit()
	return words
}

var flagWord = regexp.MustCompile(`^--?[A-Za-z][A-Za-z0-9-]*`)

// parses checks lm's words against the command tree: the command path
// exists, and every flag before "--" is known where it is used. It returns
// what is wrong, or "".
func parses(root *ucli.Command, words []string) string {
	cmd, path := root, "lm"
	known := map[string]ucli.Flag{}
	addFlags := func(c *ucli.Command) {
		for _, f := range c.Flags {
			for _, n := range f.Names() {
				known[n] = f
			}
		}
	}
	addFlags(root)
	takesValue := func(f ucli.Flag) bool {
		d, ok := f.(ucli.DocGenerationFlag)
		return ok && d.TakesValue() && d.TypeName() != "bool"
	}
	positional := false
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "--" {
			return ""
		}
		if m := flagWord.FindString(w); m != "" && w != "-" {
			name := strings.TrimLeft(m, "-")
			f, ok := known[name]
			if !ok {
				return path + " has no flag " + m
			}
			if takesValue(f) && !strings.Contains(w, "=") {
				i++ // the flag's value
				if i < len(words) && flagWord.MatchString(words[i]) && (name == "jq" || name == "q") {
					return path + ": " + w + " is followed by the flag " + words[i] + ", not a filter"
				}
			}
			continue
		}
		if !positional {
			if sub := cmd.Command(w); sub != nil {
				cmd, path = sub, path+" "+w
				addFlags(cmd)
				continue
			}
			if len(cmd.Commands) > 0 && cmd.ArgsUsage == "" {
				return path + " has no command " + w
			}
		}
		positional = true
	}
	return ""
}
