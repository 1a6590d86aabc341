package client

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/store"
)

// The call history keeps the newest historyLimit calls.
func TestHistoryKeepsTheNewest(t *testing.T) {
	defer func(limit int) { historyLimit = limit }(historyLimit)
	historyLimit = 3
	path := filepath.Join(t.TempDir(), "lm.db")
	env := &op.Env{Store: store.New(path, 5*time.Second), Home: filepath.Dir(path), Stderr: io.Discard, Now: time.Now}
	ctx := context.Background()
	for i := range 5 {
		if _, err := record(ctx, env, Record{Tool: fmt.Sprintf("call-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := history(ctx, env, func(Record) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, r := range got {
		tools = append(tools, r.Tool)
	}
	if fmt.Sprint(tools) != "[call-2 call-3 call-4]" {
		t.Fatalf("history after 5 calls with a limit of 3: %v", tools)
	}
}
