// Package duration reads the durations people type into lm's flags and
// fields, with one grammar everywhere: Go's (90s, 1h30m, 250ms) plus days
// and weeks (7d, 2w, 1d12h, 1.5d).
package duration

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"lmtool.dev/lm/pkg/op"
)

// Forms is the grammar in a few examples, for hints.
const Forms = "a number with a unit: 500ms, 90s, 30m, 1h30m, 36h, 7d, 2w"

// daysOrWeeks is a number followed by d or w, neither of which starts or
// ends one of Go's units.
var daysOrWeeks = regexp.MustCompile(`([0-9]*\.?[0-9]+)([dw])`)

// Parse reads a duration; negative ones are refused.
func Parse(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var bad error
	goForm := daysOrWeeks.ReplaceAllStringFunc(s, func(m string) string {
		n, err := strconv.ParseFloat(m[:len(m)-1], 64)
		if err != nil {
			bad = err
		}
		hours := 24 * n
		if m[len(m)-1] == 'w' {
			hours *= 7
		}
		return strconv.FormatFloat(hours, 'f', -1, 64) + "h"
	})
	d, err := time.ParseDuration(goForm)
	if bad != nil || err != nil || d < 0 {
		return 0, op.Errorf(op.KindInvalid, "invalid duration %q", s).WithHint("use %s", Forms)
	}
	return d, nil
}

// Field reads the value of an input field: def when s is empty, else a
// duration, or invalid input naming the field and what is accepted.
func Field(field, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := Parse(s)
	if err != nil {
		return 0, op.Errorf(op.KindInvalid, "%s %q is not a duration", field, s).WithHint("use %s", Forms)
	}
	return d, nil
}
