package cli

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	ucli "github.com/urfave/cli/v3"

	"lmtool.dev/lm/pkg/duration"
)

// groupAliases are the singular names people type for plural groups.
var groupAliases = map[string]string{"job": "jobs", "task": "tasks", "server": "servers"}

// usageError is a malformed command line: what was wrong, and what to do.
type usageError struct {
	cmd  string
	err  error
	hint string // "" for "see 'CMD --help'"
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// urfave/cli's own messages for a bad command line.
var (
	undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
	invalidValue  = regexp.MustCompile(`^invalid value "(.*)" for flag -+([^:]+): `)
	missingValue  = regexp.MustCompile(`^flag needs an argument: -+(.+)$`)
)

// explainUsage turns urfave/cli's parse errors into what a person can act
// on: which flag wanted what, and the flag they probably meant. Go's own
// parse errors (strconv.ParseInt: …) never reach the terminal.
func explainUsage(cmd *ucli.Command, err error) *usageError {
	u := &usageError{cmd: cmd.FullName(), err: err}
	msg := err.Error()
	if m := undefinedFlag.FindStringSubmatch(msg); m != nil {
		u.err = fmt.Errorf("unknown flag %s", dashed(m[1]))
		if s := closest(m[1], flagNames(cmd)); s != "" {
			u.hint = fmt.Sprintf("did you mean %s? (see '%s --help')", dashed(s), u.cmd)
		}
		return u
	}
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		u.err = fmt.Errorf("%s wants %s, got %q", dashed(m[2]), wants(cmd, m[2]), m[1])
		if _, isDuration := lookupFlag(cmd, m[2]).(*durationFlag); isDuration {
			u.hint = "use " + duration.Forms
		}
		return u
	}
	if m := missingValue.FindStringSubmatch(msg); m != nil {
		u.err = fmt.Errorf("%s needs a value: %s", dashed(m[1]), wants(cmd, m[1]))
	}
	return u
}

// lookupFlag finds the flag a name means on cmd or its parents.
func lookupFlag(cmd *ucli.Command, name string) ucli.Flag {
	for _, c := range cmd.Lineage() {
		for _, f := range c.Flags {
			if slices.Contains(f.Names(), name) {
				return f
			}
		}
	}
	return nil
}

// wants says what values a flag accepts.
func wants(cmd *ucli.Command, name string) string {
	switch lookupFlag(cmd, name).(type) {
	case *ucli.Int64Flag, *ucli.IntFlag:
		return "a whole number"
	case *ucli.Float64Flag:
		return "a number"
	case *durationFlag:
		return "a duration"
	case *ucli.BoolFlag:
		return "true or false"
	case *sizeFlag:
		return "a size such as 65536, 64KiB or 8MiB"
	}
	return "a value"
}

func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// flagNames are every flag name cmd accepts, its own and its parents'.
func flagNames(cmd *ucli.Command) []string {
	var names []string
	for _, c := range cmd.Lineage() {
		for _, f := range c.Flags {
			names = append(names, f.Names()...)
		}
	}
	return names
}

// closest is the candidate a mistyped word most likely meant: the nearest
// by edit distance, at most a third of the word's length away (one edit
// for short words), or one the word begins; "" when none is near.
func closest(word string, candidates []string) string {
	if len(word) < 2 {
		return ""
	}
	best, bestDist := "", max(1, len(word)/3)+1
	for _, c := range candidates {
		if len(c) < 2 {
			continue // one-letter flags are too near everything
		}
		d := editDistance(word, c)
		if len(word) >= 3 && strings.HasPrefix(c, word) {
			d = min(d, 1)
		}
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Damerau–Levenshtein distance (optimal string
// alignment): insertions, deletions, substitutions and swaps of neighbours.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range rb {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// unknownCommand answers a word that names no subcommand of cmd.
func unknownCommand(cmd *ucli.Command) error {
	word := cmd.Args().First()
	u := &usageError{cmd: cmd.FullName(), err: fmt.Errorf("unknown command %q for %q; commands: %s", word, cmd.FullName(), subcommands(cmd))}
	var names []string
	for _, c := range cmd.VisibleCommands() {
		names = append(names, c.Names()...)
	}
	if s := closest(word, names); s != "" {
		u.hint = fmt.Sprintf("did you mean '%s %s'?", cmd.FullName(), s)
	}
	return u
}

// rewriteArgs turns the spellings people expect into the command line lm
// runs: `lm help queue list` is `lm queue list --help` (a word that names
// no command is left for the unknown-command answer), and `lm --version`
// prints the version line.
func rewriteArgs(root *ucli.Command, args []string) []string {
	if len(args) < 2 {
		return args
	}
	switch args[1] {
	case "help", "h":
		if len(args) < 3 {
			return args
		}
		words := append([]string{args[0]}, args[2:]...)
		cmd := root
		for _, w := range args[2:] {
			if cmd = cmd.Command(w); cmd == nil {
				return words
			}
		}
		return append(words, "--help")
	case "--version", "-V":
		return append([]string{args[0], "version", "-o", "table"}, args[2:]...)
	}
	return args
}

// sizeFlag takes a byte count with an optional binary or decimal unit:
// 65536, 64KiB, 64K, 8MiB, 1GB.
type sizeFlag = ucli.FlagBase[int64, ucli.NoConfig, sizeValue]

type sizeValue struct{ val *int64 }

func (sizeValue) Create(v int64, p *int64, _ ucli.NoConfig) ucli.Value {
	*p = v
	return &sizeValue{val: p}
}

func (sizeValue) ToString(v int64) string { return strconv.FormatInt(v, 10) }

func (s *sizeValue) Set(text string) error {
	n, err := parseSize(text)
	if err != nil {
		return err
	}
	*s.val = n
	return nil
}

func (s *sizeValue) Get() any { return *s.val }

func (s *sizeValue) String() string {
	if s.val == nil {
		return "0"
	}
	return strconv.FormatInt(*s.val, 10)
}

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1000, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1000 * 1000, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1000 * 1000 * 1000, "gib": 1 << 30,
}

var sizePattern = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)$`)

// parseSize reads a byte count with an optional unit.
func parseSize(text string) (int64, error) {
	m := sizePattern.FindStringSubmatch(strings.TrimSpace(text))
	if m == nil {
		return 0, fmt.Errorf("not a size: %q", text)
	}
	unit, ok := sizeUnits[strings.ToLower(m[2])]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q", m[2])
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil || n*float64(unit) > 1<<62 {
		return 0, fmt.Errorf("not a size: %q", text)
	}
	return int64(n * float64(unit)), nil
}
