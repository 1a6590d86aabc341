package extract

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func mustPatterns(t *testing.T, sources ...string) []pattern {
	t.Helper()
	var ps []pattern
	for _, s := range sources {
		p, err := compilePattern(s)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// TestLiteralPrefilter checks which patterns search only the lines holding
// a literal: those whose matches cannot leave a line.
func TestLiteralPrefilter(t *testing.T) {
	for src, want := range map[string]string{
		`TODO_\w+`:          "TODO_",
		`func (\w+)\(`:      "func ",
		`\bimport\b`:        "import",
		`^\s*//\s*FIXME`:    "", // \s matches a newline
		`(?i)todo`:          "", // no case-sensitive literal
		`(?s)TODO.*`:        "", // . matches a newline
		`(?-m)^TODO`:        "", // the text's start, not a line's
		`TODO\z`:            "",
		`a|b`:               "",
		`x(abc)+y`:          "abc",
		`(?:TODO){2,}`:      "TODO",
		`(?:TODO)?x`:        "x",
		`[^a]TODO`:          "", // [^a] matches a newline
		`[^a\n]TODO[^\n]*$`: "TODO",
		`\x{FFFD}ab`:        "", // matches invalid UTF-8, which bytes.Index would not find
	} {
		p := mustPatterns(t, src)[0]
		if string(p.literal) != want {
			t.Errorf("%s: literal %q, want %q", src, p.literal, want)
		}
	}
}

// TestFindAllAgreesWithTheRegex compares the prefiltered search with the
// regex run over the whole text, on texts built to put lines' ends, \r,
// invalid UTF-8 and word characters next to the literals.
func TestFindAllAgreesWithTheRegex(t *testing.T) {
	sources := []string{
		`TODO`, `TODO_\w+`, `\bTODO\b`, `\BODO`, `^TODO`, `TODO$`, `^TODO$`, `TODO\r?$`,
		`x?TODO\w*`, `(TO)(DO)`, `TODO|DONE`, `[^\n]*TODO[^\n]*`, `\w*é\w*`, `é$`,
		`ab*`, `(?:ab)+`, `TO\x{FFFD}`, `\W*TODO\W*`, `(?U)TODO.*`, `TODO.*?x`,
		// not line-local: searched whole, which this also checks
		`(?-m)^TODO`, `TODO\z`, `TODO\s+DO`, `(?s)TODO.DO`, `[^a]TODO`, `TODO\nDO`,
	}
	pieces := []string{"TODO", "TO", "DO", "DONE", "a", "b", "ab", "x", "_", " ", "\n", "\n", "\r\n", "é", "\xff", "\xc3", "\t"}
	rng := rand.New(rand.NewPCG(1, 2))
	patterns := mustPatterns(t, sources...)
	prefiltered := 0
	for _, p := range patterns {
		if p.literal != nil {
			prefiltered++
		}
	}
	if prefiltered < len(patterns)/2 {
		t.Fatalf("only %d of %d patterns use the prefilter: the comparison would test little", prefiltered, len(patterns))
	}
	for range 3000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := []byte(b.String())
		for _, p := range patterns {
			for _, n := range []int{1, 2, 1000} {
				got, want := p.findAll(text, n), p.re.FindAllIndex(text, n)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%q in %q, n=%d: %v, the regex alone %v", p.source, text, n, got, want)
				}
			}
		}
	}
}
