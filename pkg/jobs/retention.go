package jobs

import (
	"context"
	"os"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/config"
	"lmtool.dev/lm/pkg/duration"
	"lmtool.dev/lm/pkg/op"
)

// Finished jobs are kept, output and all, until they are older than
// DefaultKeepFor or more than DefaultKeepFinished newer ones have finished;
// [jobs] keep_for and keep_finished in config.toml change both. Each job's
// output ring is up to 4 MiB, so the defaults bound what finished jobs cost
// at about 400 MiB even when every one filled its ring.
const (
	DefaultKeepFor      = 7 * 24 * time.Hour
	DefaultKeepFinished = 100
)

// retention is how long and how many finished jobs are kept.
type retention struct {
	keepFor  time.Duration
	finished int
}

// settingsTable is the [jobs] table of config.toml: one struct, since the table is
// read strictly and each reader must know every key.
type settingsTable struct {
	MaxRunning   int    `toml:"max_running"`
	KeepFor      string `toml:"keep_for"`
	KeepFinished *int   `toml:"keep_finished"`
}

func settingsOf(home string) (settingsTable, error) {
	t := settingsTable{MaxRunning: DefaultMaxRunning}
	if err := config.Table(home, "jobs", &t); err != nil {
		return settingsTable{}, op.Errorf(op.KindInvalid, "%v", err).
			WithHint("[jobs] takes max_running (jobs that run at once), keep_for (a duration such as 7d) and keep_finished (a number of jobs)")
	}
	return t, nil
}

// retention reads keep_for and keep_finished, with their defaults.
func (t settingsTable) retention(home string) (retention, error) {
	r := retention{keepFor: DefaultKeepFor, finished: DefaultKeepFinished}
	if t.KeepFor != "" {
		d, err := duration.Field("keep_for in "+config.Path(home), t.KeepFor, DefaultKeepFor)
		if err != nil {
			return retention{}, err
		}
		r.keepFor = d
	}
	if t.KeepFinished != nil {
		if *t.KeepFinished < 0 {
			return retention{}, op.Errorf(op.KindInvalid, "keep_finished in %s is %d: want 0 or more jobs", config.Path(home), *t.KeepFinished)
		}
		r.finished = *t.KeepFinished
	}
	return r, nil
}

// expired reports whether a finished job is past the retention, given the
// number of finished jobs newer than it.
func (r retention) expired(now time.Time) func(j Job, newer int) bool {
	cutoff := now.Add(-r.keepFor)
	return func(j Job, newer int) bool { return newer >= r.finished || j.FinishedAt.Before(cutoff) }
}

// removeFinished deletes the finished jobs drop chooses, and their output.
func removeFinished(ctx context.Context, env *op.Env, drop func(j Job, newer int) bool) ([]string, error) {
	var removed []string
	err := env.Store.Update(ctx, func(tx *bolt.Tx) error {
		var err error
		removed, err = dropFinished(tx, drop)
		return err
	})
	if err != nil {
		return nil, err
	}
	removeOutput(env.Home, removed)
	return removed, nil
}

// dropFinished deletes the records of the finished jobs drop chooses; drop
// sees each with the number of finished jobs newer than it. The caller
// removes their output once the transaction has committed.
func dropFinished(tx *bolt.Tx, drop func(j Job, newer int) bool) ([]string, error) {
	jobs, err := all(tx)
	if err != nil {
		return nil, err
	}
	var finished []Job
	for _, j := range jobs {
		if j.Terminal() && j.FinishedAt != nil {
			finished = append(finished, j)
		}
	}
	slices.SortFunc(finished, func(a, b Job) int { return b.FinishedAt.Compare(*a.FinishedAt) })
	var removed []string
	b := jobsBucket.Of(tx)
	for newer, j := range finished {
		if drop(j, newer) {
			if err := b.Delete([]byte(j.ID)); err != nil {
				return nil, err
			}
			removed = append(removed, j.ID)
		}
	}
	return removed, nil
}

// removeOutput deletes the output of jobs whose records are gone.
func removeOutput(home string, ids []string) {
	for _, id := range ids {
		os.RemoveAll(jobDir(home, id))
	}
}
