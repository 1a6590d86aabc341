package queue

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

func benchEnv(b *testing.B) *op.Env {
	b.Helper()
	return &op.Env{Store: store.New(filepath.Join(b.TempDir(), "lm.db"), time.Second), Stderr: io.Discard, Now: time.Now}
}

func fill(b *testing.B, env *op.Env, n int) {
	b.Helper()
	for done := 0; done < n; {
		batch := min(n-done, 50_000)
		in := AddInput{Contents: make([]string, batch)}
		for i := range in.Contents {
			in.Contents[i] = fmt.Sprintf("instruction %d", done+i)
		}
		if _, err := Add(context.Background(), env, in); err != nil {
			b.Fatal(err)
		}
		done += batch
	}
}

// BenchmarkAddBatch adds 10,000 instructions in one transaction.
func BenchmarkAddBatch(b *testing.B) {
	env := benchEnv(b)
	in := AddInput{Contents: make([]string, 10_000)}
	for i := range in.Contents {
		in.Contents[i] = fmt.Sprintf("instruction number %d: do the thing", i)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := Add(context.Background(), env, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNext takes one instruction per op from a deep queue.
func BenchmarkNext(b *testing.B) {
	env := benchEnv(b)
	fill(b, env, max(b.N+10, 100_000))
	b.ResetTimer()
	for range b.N {
		out, err := Next(context.Background(), env, NextInput{AgentID: "bench"})
		if err != nil || out.ResultType != ResultInstruction {
			b.Fatal(out, err)
		}
	}
}
