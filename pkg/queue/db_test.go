package queue

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/store"
)

func testEnv(t testing.TB) *op.Env {
	t.Helper()
	return &op.Env{Store: store.New(filepath.Join(t.TempDir(), "lm.db"), time.Second), Stderr: io.Discard, Now: time.Now}
}

// Settings stored before a setting existed read with its default, and
// settings that do not decode fail the read naming bucket and key.
func TestStoredSettingsReadOnce(t *testing.T) {
	env := testEnv(t)
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
	put(`{"default_wait_seconds":7,"default_empty_response":"none"}`)
	got, err := CurrentSettings(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Settings{DefaultWaitSeconds: 7, DefaultEmptyResponse: "none", AgentStaleAfterSeconds: DefaultAgentStaleAfter}); got != want {
		t.Errorf("settings %+v, want %+v", got, want)
	}
	put(`{"default_wait_seconds":"soon"}`)
	_, err = CurrentSettings(ctx, env)
	var corrupt *store.CorruptError
	if !errors.As(err, &corrupt) || corrupt.Bucket != "queue.meta" || corrupt.Key != "settings" {
		t.Errorf("damaged settings: %v", err)
	}
}
