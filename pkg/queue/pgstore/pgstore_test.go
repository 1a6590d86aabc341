package pgstore_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/queue"
	"lmtool.dev/lm/pkg/queue/pgstore"
	"lmtool.dev/lm/pkg/queue/pgstore/pgtest"
	"lmtool.dev/lm/pkg/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// migrated returns an env whose queue is a new, migrated database.
func migrated(t *testing.T) *op.Env {
	t.Helper()
	url := pgtest.URL(t)
	if _, err := pgstore.Migrate(context.Background(), url); err != nil {
		t.Fatal(err)
	}
	return &op.Env{Store: store.New(filepath.Join(t.TempDir(), "lm.db"), time.Second), Queue: url, Stderr: io.Discard, Now: time.Now}
}

func TestUnmigratedDatabaseIsRefusedWithTheWayOut(t *testing.T) {
	url := pgtest.URL(t)
	env := &op.Env{Store: store.New(filepath.Join(t.TempDir(), "lm.db"), time.Second), Queue: url, Stderr: io.Discard, Now: time.Now}
	_, err := queue.List(context.Background(), env, queue.ListInput{})
	if op.KindOf(err) != op.KindUnavailable || !strings.Contains(err.Error(), "schema version 0") {
		t.Fatalf("unmigrated database: %v", err)
	}
	if env := op.EnvelopeOf(err); !strings.Contains(env.Suggestion, "lm store migrate") {
		t.Fatalf("hint %q", env.Suggestion)
	}
}

func TestAddClaimRoundTrip(t *testing.T) {
	env := migrated(t)
	ctx := context.Background()
	if _, err := queue.Add(ctx, env, queue.AddInput{Contents: []string{"one", "two"}}); err != nil {
		t.Fatal(err)
	}
	zero := 0
	queue.Config(ctx, env, queue.ConfigInput{DefaultWaitSeconds: &zero})
	out, err := queue.Next(ctx, env, queue.NextInput{AgentID: "a"})
	if err != nil || out.Instruction == nil || out.Instruction.Content != "one" || out.RemainingPending != 1 {
		t.Fatalf("next: %+v %v", out, err)
	}
	list, err := queue.List(ctx, env, queue.ListInput{})
	if err != nil || len(list.Items) != 2 || list.Items[0].Content != "two" || list.Items[1].Status != queue.StatusConsumed {
		t.Fatalf("list: %+v %v", list, err)
	}
}
