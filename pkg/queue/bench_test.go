package queue

import (
	"context"
	"fmt"
	"testing"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/testkit"
)

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
	env := testkit.Env(b)
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
	env := testkit.Env(b)
	fill(b, env, b.N+10)
	b.ResetTimer()
	for range b.N {
		out, err := Next(context.Background(), env, NextInput{AgentID: "bench"})
		if err != nil || out.ResultType != ResultInstruction {
			b.Fatal(out, err)
		}
	}
}

// BenchmarkListPending lists 10 pending instructions with 1,000 and with
// 1,000,000 consumed ones in the store: the pending index keeps it flat.
func BenchmarkListPending(b *testing.B) {
	for _, consumed := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("consumed=%d", consumed), func(b *testing.B) {
			env := testkit.Env(b)
			consumeHistory(b, env, consumed)
			fill(b, env, 10)
			b.ResetTimer()
			for range b.N {
				out, err := List(context.Background(), env, ListInput{Status: StatusPending})
				if err != nil || len(out.Items) != 10 {
					b.Fatal(len(out.Items), err)
				}
			}
		})
	}
}

// consumeHistory writes n consumed instructions directly, in large
// transactions: a million get_user_request calls would take many minutes.
func consumeHistory(b *testing.B, env *op.Env, n int) {
	b.Helper()
	for done := 0; done < n; {
		batch := min(n-done, 100_000)
		err := update(context.Background(), env, func(t *tx) error {
			order := t.LastOrder()
			for i := range batch {
				order += OrderStep
				r := t.record(fmt.Sprintf("old %d", done+i), order)
				if err := t.Insert([]Record{r}); err != nil {
					return err
				}
				if _, err := t.consume(r, "history", false); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		done += batch
	}
}
