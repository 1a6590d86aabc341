package cli

import (
	"fmt"
	"time"

	ucli "github.com/urfave/cli/v3"

	"lmtool.dev/lm/pkg/duration"
)

// durationFlag is a duration flag in lm's one duration grammar (90s, 1h30m,
// 7d, 2w), the same as every duration field of an operation's input.
type durationFlag = ucli.FlagBase[time.Duration, ucli.NoConfig, durationValue]

// durationValue is the flag's value; its methods satisfy ucli.ValueCreator
// and flag.Value.
type durationValue time.Duration

func (durationValue) Create(v time.Duration, p *time.Duration, _ ucli.NoConfig) ucli.Value {
	*p = v
	return (*durationValue)(p)
}

func (durationValue) ToString(v time.Duration) string { return v.String() }

func (d *durationValue) Set(s string) error {
	v, err := duration.Parse(s)
	if err != nil {
		return fmt.Errorf("want %s", duration.Forms)
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) Get() any { return time.Duration(*d) }

func (d *durationValue) String() string { return time.Duration(*d).String() }
