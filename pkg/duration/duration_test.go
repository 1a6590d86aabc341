package duration

import (
	"testing"
	"time"

	"lmtool.dev/lm/pkg/op"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"90s": 90 * time.Second, "1h30m": 90 * time.Minute, "250ms": 250 * time.Millisecond, "0": 0,
		"7d": 7 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "1d12h": 36 * time.Hour, "1.5d": 36 * time.Hour,
		" 36h ": 36 * time.Hour, "1w2d3h": (9*24 + 3) * time.Hour,
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "7", "d", "7days", "-1h", "-2d", "1x", "1.2.3d", "abc"} {
		if got, err := Parse(bad); err == nil || op.KindOf(err) != op.KindInvalid {
			t.Errorf("Parse(%q) = %v, %v; want invalid input", bad, got, err)
		}
	}
}

func TestField(t *testing.T) {
	if d, err := Field("older_than", "", time.Hour); d != time.Hour || err != nil {
		t.Errorf("empty = %v, %v", d, err)
	}
	_, err := Field("older_than", "7 days", 0)
	if e := op.EnvelopeOf(err); e.Error != `older_than "7 days" is not a duration` || e.Suggestion == "" {
		t.Errorf("error = %+v", e)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"90s", "1d12h", "1.5w", "-1h", ".5d", "1e3d", "9999999999w", "dd", "1d1d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("Parse(%q) = %v: negative", s, d)
		}
		if again, err := Parse(d.String()); err != nil || again != d {
			t.Fatalf("Parse(%q) = %v, which reads back as %v, %v", s, d, again, err)
		}
	})
}
