package queue

import (
	"context"
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/store"
	"lmtool.dev/lm/pkg/testkit"
)

// Settings stored before a setting existed read with its default, and
// settings that do not decode fail the read naming bucket and key.
func TestStoredSettingsReadOnce(t *testing.T) {
	env := testkit.Env(t)
	ctx := context.Background()
	put := func(v string) {
		t.Helper()
		if err := env.Store.Update(ctx, func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(bMeta)
			if err != nil {
				return err
			}
			return b.Put(kSettings, []byte(v))
		}); err != nil {
			t.Fatal(err)
		}
	}
	// read takes the settings as every operation does, in a read transaction.
	read := func() (Settings, error) {
		var s Settings
		err := view(ctx, env, func(t *tx) error { s = t.settings(); return nil })
		return s, err
	}
	put(`{"default_wait_seconds":7,"default_empty_response":"none"}`)
	got, err := read()
	if err != nil {
		t.Fatal(err)
	}
	if want := (Settings{DefaultWaitSeconds: 7, DefaultEmptyResponse: "none", AgentStaleAfterSeconds: DefaultAgentStaleAfter}); got != want {
		t.Errorf("settings %+v, want %+v", got, want)
	}
	put(`{"default_wait_seconds":"soon"}`)
	_, err = read()
	var corrupt *store.CorruptError
	if !errors.As(err, &corrupt) || corrupt.Bucket != "queue.meta" || corrupt.Key != "settings" {
		t.Errorf("damaged settings: %v", err)
	}
}
