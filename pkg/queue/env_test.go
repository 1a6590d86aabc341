package queue

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/store"
)

func testEnv(t testing.TB) *op.Env {
	t.Helper()
	return &op.Env{Store: store.New(filepath.Join(t.TempDir(), "lm.db"), time.Second), Stderr: io.Discard, Now: time.Now}
}
