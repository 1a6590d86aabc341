package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/proc"
)

// costHistory is how many instructions the "after months" store has seen:
// added, consumed and pruned before its costs are measured again.
const costHistory = 100_000

// costOps is how many operations each per-operation figure averages.
const costOps = 300

// cost measures what lm costs after long use, against a fresh store and a
// one-key bbolt commit on the same disk.
func cost(lm string) error {
	fmt.Println("## What lm costs after long use")
	fmt.Println()
	ref, err := oneKeyCommitBytes()
	if err != nil {
		return err
	}
	fmt.Printf("Bytes written and CPU per operation, measured on the gateway's process from /proc (%d operations each), on a fresh store and after %d instructions were added, consumed and pruned; the reference is one durable one-key bbolt commit on the same disk: %s.\n\n",
		costOps, costHistory, kb(ref))
	fmt.Println("| operation | store | bytes written | × one-key commit | CPU |")
	fmt.Println("|---|---|---|---|---|")
	dir, done := home()
	defer done()
	gw, err := idleGateway(lm, dir)
	if err != nil {
		return err
	}
	defer gw.stop()
	measure := func(label string) error {
		post, err := perOp(gw, func(i int) error {
			return expect(hold("POST", gw.base+"/api/instructions", fmt.Sprintf(`{"content":"cost %d"}`, i), ""))
		})
		if err != nil {
			return err
		}
		fmt.Printf("| `POST /api/instructions` | %s | %s | %.1f | %s |\n", label, kb(post.Written), float64(post.Written)/float64(ref), ms(post.CPU))
		next, err := perOp(gw, func(i int) error {
			return expect(hold("POST", gw.base+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_user_request","arguments":{"agent_id":"cost"}}}`, ""))
		})
		if err != nil {
			return err
		}
		fmt.Printf("| `get_user_request` | %s | %s | %.1f | %s |\n", label, kb(next.Written), float64(next.Written)/float64(ref), ms(next.CPU))
		add, err := cliAdds(lm, dir)
		if err != nil {
			return err
		}
		fmt.Printf("| `lm queue add` (its own process) | %s | %s | %.1f | %s |\n", label, kb(add.Written), float64(add.Written)/float64(ref), ms(add.CPU))
		return nil
	}
	if err := measure("fresh"); err != nil {
		return err
	}
	fresh, _ := os.Stat(filepath.Join(dir, "lm.db"))
	if err := history(lm, dir); err != nil {
		return err
	}
	pruned, _ := os.Stat(filepath.Join(dir, "lm.db"))
	if err := measure(fmt.Sprintf("after %d + prune", costHistory)); err != nil {
		return err
	}
	gw.stop()
	if err := command(dir, lm, "store", "compact").Run(); err != nil {
		return fmt.Errorf("store compact: %w", err)
	}
	compacted, _ := os.Stat(filepath.Join(dir, "lm.db"))
	fmt.Println()
	fmt.Printf("`lm.db`: %s fresh (after the first %d operations), %s after %d instructions and a prune, %s after `lm store compact`.\n",
		mb(fresh.Size()), 2*costOps, mb(pruned.Size()), costHistory, mb(compacted.Size()))
	fmt.Println()
	fmt.Println("Targets: after the prune, bytes and CPU per operation at most 1.2× the fresh store's, without `lm store compact`;")
	fmt.Println("a commit that leaves the store mostly free pages compacts it by itself, so the prune leaves a small file.")
	return abandonedSessions(lm)
}

// perOp runs op costOps times and returns the gateway's cost per run.
func perOp(gw *httpProcess, op func(int) error) (proc.Usage, error) {
	before, err := proc.UsageOf(gw.cmd.Process.Pid)
	if err != nil {
		return proc.Usage{}, err
	}
	for i := range costOps {
		if err := op(i); err != nil {
			return proc.Usage{}, err
		}
	}
	after, err := proc.UsageOf(gw.cmd.Process.Pid)
	if err != nil {
		return proc.Usage{}, err
	}
	d := after.Sub(before)
	return proc.Usage{CPU: d.CPU / costOps, Written: d.Written / costOps}, nil
}

// cliAdds runs `lm queue add` costOps times and returns what each process
// cost: CPU and the blocks it wrote, from its resource usage. Its start
// costs CPU (see Cold start) but writes nothing.
func cliAdds(lm, dir string) (proc.Usage, error) {
	var total proc.Usage
	for i := range costOps {
		cmd := command(dir, lm, "queue", "add", fmt.Sprintf("cli cost %d", i))
		if err := cmd.Run(); err != nil {
			return proc.Usage{}, fmt.Errorf("queue add: %w", err)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		total.CPU += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		total.Written += ru.Oublock * 512
	}
	return proc.Usage{CPU: total.CPU / costOps, Written: total.Written / costOps}, nil
}

// expect reads a response and fails unless it succeeded.
func expect(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 || strings.Contains(string(body), `"isError":true`) {
		return fmt.Errorf("%s: %s", resp.Status, body)
	}
	return nil
}

// history adds costHistory instructions, has one agent take them all
// through get_user_request over lm mcp (the claim path agents use, so the
// freed pages are the real ones), and prunes them.
func history(lm, dir string) error {
	var batch strings.Builder
	for i := range costHistory {
		fmt.Fprintf(&batch, "\"history %d\"\n", i)
	}
	add := command(dir, lm, "queue", "add", "--jsonl")
	add.Stdin = strings.NewReader(batch.String())
	if err := add.Run(); err != nil {
		return fmt.Errorf("queue add: %w", err)
	}
	agent, err := startSession(command(dir, lm, "mcp"))
	if err != nil {
		return err
	}
	defer agent.close()
	for range costHistory {
		if _, err := agent.call("get_user_request", `{"agent_id":"history"}`); err != nil {
			return err
		}
	}
	return command(dir, lm, "queue", "prune", "--consumed").Run()
}

// oneKeyCommitBytes is what one durable commit of one small key writes.
func oneKeyCommitBytes() (int64, error) {
	dir, done := home()
	defer done()
	db, err := bolt.Open(filepath.Join(dir, "ref.db"), 0o600, nil)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	before, err := proc.UsageOf(os.Getpid())
	if err != nil {
		return 0, err
	}
	for i := range costOps {
		if err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("k"))
			if err != nil {
				return err
			}
			return b.Put(binary.BigEndian.AppendUint64(nil, uint64(i)), []byte("v"))
		}); err != nil {
			return 0, err
		}
	}
	after, err := proc.UsageOf(os.Getpid())
	if err != nil {
		return 0, err
	}
	return after.Sub(before).Written / costOps, nil
}

// abandonedSessions measures a stateful gateway's memory after clients
// open sessions and never end them.
func abandonedSessions(lm string) error {
	const sessions = 5_000
	dir, done := home()
	defer done()
	gw, err := idleGateway(lm, dir, "--stateful")
	if err != nil {
		return err
	}
	defer gw.stop()
	start, _ := gw.memory()
	for range sessions {
		if err := expect(hold("POST", gw.base+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"abandoned","version":"1"}}}`, "")); err != nil {
			return err
		}
	}
	time.Sleep(500 * time.Millisecond)
	after, _ := gw.memory()
	fmt.Println()
	fmt.Printf("A `--stateful` gateway's resident memory: %s at start, %s after %d sessions opened and abandoned (at most %d are kept, each ended after 30 idle minutes).\n",
		mib(start), mib(after), sessions, 1000)
	return nil
}

func kb(b int64) string { return fmt.Sprintf("%.1f KB", float64(b)/1000) }
func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
