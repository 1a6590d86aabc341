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

func retentionOf(home string) (retention, error) {
	settings, err := settingsOf(home)
	if err != nil {
		return retention{}, err
	}
	r := retention{keepFor: DefaultKeepFor, finished: DefaultKeepFinished}
	if settings.KeepFor != "" {
		d, err := duration.Field("keep_for in "+config.Path(home), settings.KeepFor, DefaultKeepFor)
		if err != nil {
			return retention{}, err
		}
		r.keepFor = d
	}
	if settings.KeepFinished != nil {
		if *settings.KeepFinished < 0 {
			return retention{}, op.Errorf(op.KindInvalid, "keep_finished in %s is %d: want 0 or more jobs", config.Path(home), *settings.KeepFinished)
		}
		r.finished = *settings.KeepFinished
	}
	return r, nil
}

// removeFinished deletes the finished jobs drop chooses, and their output.
// drop sees each finished job with the number of finished jobs newer than
// it.
func removeFinished(ctx context.Context, env *op.Env, drop func(j Job, newer int) bool) ([]string, error) {
	var removed []string
	err := env.Store.Update(ctx, func(tx *bolt.Tx) error {
		removed = removed[:0]
		b := jobsBucket.Of(tx)
		jobs, err := all(tx)
		if err != nil {
			return err
		}
		var finished []Job
		for _, j := range jobs {
			if j.Terminal() && j.FinishedAt != nil {
				finished = append(finished, j)
			}
		}
		slices.SortFunc(finished, func(a, b Job) int { return b.FinishedAt.Compare(*a.FinishedAt) })
		for newer, j := range finished {
			if drop(j, newer) {
				if err := b.Delete([]byte(j.ID)); err != nil {
					return err
				}
				removed = append(removed, j.ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, id := range removed {
		os.RemoveAll(jobDir(env.Home, id))
	}
	return removed, nil
}

// applyRetention removes the finished jobs past [jobs] keep_for or
// keep_finished. lm jobs start applies it, so a machine that runs jobs
// every day does not keep them forever.
func applyRetention(ctx context.Context, env *op.Env) error {
	r, err := retentionOf(env.Home)
	if err != nil {
		return err
	}
	cutoff := env.Now().Add(-r.keepFor)
	_, err = removeFinished(ctx, env, func(j Job, newer int) bool {
		return newer >= r.finished || j.FinishedAt.Before(cutoff)
	})
	return err
}
