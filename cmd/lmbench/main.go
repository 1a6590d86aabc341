// Command lmbench measures lm's whole-process performance against reference
// programs run in the same session (`make bench` calls it); it prints
// Markdown. Figures are ratios, so they compare across machines.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	bolt "go.etcd.io/bbolt"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: lmbench coldstart|wakeup|idle|follow|cost|throughput|mcp|gateway|postgres LM [HELLO] | hub LM SERVER_EVERYTHING | hop LM NODE_BIN | agents LM | compare BASELINE FIGURES | echo-server | json-server ADDR_FILE | http-echo-server ADDR_FILE [STDIO_SERVER] | raw-proxy ADDR_FILE STDIO_SERVER...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "noop":
		// Exits at once: its start-up is a Go program's plus the package
		// initialisation of mcp-go's server and its dependencies.
	case "echo-server":
		err = echoServer()
	case "json-server":
		err = jsonServer(os.Args[2])
	case "http-echo-server":
		err = httpEchoServer(os.Args[2], os.Args[3:]...)
	case "raw-proxy":
		err = rawProxy(os.Args[2], os.Args[3:]...)
	case "gateway":
		err = gatewayBench(os.Args[2])
	case "coldstart":
		err = coldStart(os.Args[2], os.Args[3])
	case "wakeup":
		err = wakeup(os.Args[2])
	case "idle":
		err = idleCost(os.Args[2])
	case "follow":
		err = followCost(os.Args[2])
	case "cost":
		err = cost(os.Args[2])
	case "throughput":
		err = throughput(os.Args[2])
	case "mcp":
		err = mcpRoundTrip(os.Args[2])
	case "hub":
		err = hubBench(os.Args[2], os.Args[3])
	case "postgres":
		err = postgresBench(os.Args[2])
	case "hop":
		err = hopBench(os.Args[2], os.Args[3])
	case "agents":
		err = agentsBench(os.Args[2])
	case "compare":
		err = compareFigures(os.Args[2], os.Args[3], os.Stdout, os.Stderr)
	default:
		err = fmt.Errorf("unknown benchmark %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "lmbench: %v\n", err)
		os.Exit(1)
	}
}

// echoServer is the reference: a minimal mcp-go stdio server with one tool.
func echoServer() error {
	s := server.NewMCPServer("echo", "1")
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("text", "")), nil
	})
	return server.NewStdioServer(s).Listen(context.Background(), os.Stdin, os.Stdout)
}

func home() (string, func()) {
	dir, err := os.MkdirTemp("", "lmbench-")
	if err != nil {
		panic(err)
	}
	return dir, func() { os.RemoveAll(dir) }
}

func command(dir string, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "LM_HOME="+dir, "LM_STORE=")
	return cmd
}

func timeRun(cmd *exec.Cmd) time.Duration {
	start := time.Now()
	if err := cmd.Run(); err != nil {
		panic(fmt.Sprintf("%v: %v", cmd.Args, err))
	}
	return time.Since(start)
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func coldStart(lm, hello string) error {
	dir, done := home()
	defer done()
	const n = 300
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var h, mcpInit, v, add []time.Duration
	for range n {
		h = append(h, timeRun(exec.Command(hello)))
		mcpInit = append(mcpInit, timeRun(exec.Command(self, "noop")))
		v = append(v, timeRun(command(dir, lm, "version")))
		add = append(add, timeRun(command(dir, lm, "queue", "add", "x")))
	}
	hm := percentile(h, 0.5)
	fmt.Println("## Cold start (median of", n, "runs)")
	fmt.Println()
	fmt.Println("| command | wall time | × hello-world | target |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| Go hello-world (reference) | %s | 1.00 | |\n", ms(hm))
	for _, r := range []struct {
		name, target string
		d            []time.Duration
	}{
		{"a Go program that links mcp-go's server and exits (reference)", "", mcpInit},
		{"`lm version`", "≤ 3", v},
		{"`lm queue add x`", "", add},
	} {
		m := percentile(r.d, 0.5)
		fmt.Printf("| %s | %s | %.2f | %s |\n", r.name, ms(m), float64(m)/float64(hm), r.target)
	}
	fmt.Println()
	fmt.Println("Package initialisation of `lm version`, most expensive first (`GODEBUG=inittrace=1`):")
	fmt.Println()
	fmt.Println("```")
	trace := command(dir, lm, "version")
	trace.Env = append(trace.Env, "GODEBUG=inittrace=1")
	var stderr strings.Builder
	trace.Stderr = &stderr
	if err := trace.Run(); err != nil {
		return err
	}
	for _, line := range topInits(stderr.String(), 4) {
		fmt.Println(line)
	}
	fmt.Println("```")
	fmt.Println()
	floor, own := percentile(mcpInit, 0.5), percentile(v, 0.5)-percentile(mcpInit, 0.5)
	fmt.Printf("Linking mcp-go's server alone costs %s (%.2f× hello-world): its server package imports\n", ms(floor), float64(floor)/float64(hm))
	fmt.Println("santhosh-tekuri/jsonschema/v6 for optional input and output validation, and that package's `init`")
	fmt.Println("compiles the meta-schemas of five JSON Schema drafts in every process that links it. Go runs every")
	fmt.Println("linked package's `init` before `main`, so no flag or lazy path inside lm can skip it. The ways around")
	fmt.Println("are a fork of mcp-go or of the schema library, or a server of our own in place of mcp-go's for")
	fmt.Printf("`lm mcp` and the gateway; each would be carried through every upgrade to save at most %s per\n", ms(floor-hm))
	fmt.Println("process, which neither a person at a shell nor an agent's tool call (tens of milliseconds at least)")
	fmt.Printf("can notice. lm's own start, beyond that reference, is %s (%.2f× hello-world).\n", ms(own), float64(own)/float64(hm))
	return nil
}

// topInits returns the n init trace lines with the most clock time.
func topInits(trace string, n int) []string {
	type entry struct {
		line  string
		clock float64
	}
	var entries []entry
	for _, line := range strings.Split(trace, "\n") {
		var pkg string
		var at, clock float64
		if _, err := fmt.Sscanf(line, "init %s @%f ms, %f ms clock", &pkg, &at, &clock); err == nil {
			entries = append(entries, entry{line, clock})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int {
		switch {
		case a.clock > b.clock:
			return -1
		case a.clock < b.clock:
			return 1
		}
		return 0
	})
	var out []string
	for _, e := range entries[:min(n, len(entries))] {
		out = append(out, e.line)
	}
	return out
}

// wakeup measures instruction added by process A → delivered to a
// `lm queue next` already waiting in process B, from the instruction's
// created_at to its consumed_at (one clock, both stamped in the store's
// transactions, so process start-up is not counted).
func wakeup(lm string) error {
	dir, done := home()
	defer done()
	if err := command(dir, lm, "queue", "config", "default_wait_seconds=30").Run(); err != nil {
		return err
	}
	const n = 200
	var lat []time.Duration
	for i := range n {
		d, err := wakeTrial(
			command(dir, lm, "queue", "next", "--agent-id", "b"),
			func() error { return waitWaiting(dir, lm) },
			command(dir, lm, "queue", "add", fmt.Sprintf("wake %d", i)))
		if err != nil {
			return fmt.Errorf("trial %d: %w", i, err)
		}
		lat = append(lat, d)
	}
	fmt.Println("## Wake-up latency")
	fmt.Println()
	fmt.Printf("An instruction added by one process reaches a `lm queue next` already waiting in another (%d trials; from the add's transaction to the claim's):\n\n", n)
	fmt.Println("| p50 | p99 | max | target p99 |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| %s | %s | %s | ≤ 25 ms |\n", ms(percentile(lat, 0.5)), ms(percentile(lat, 0.99)), ms(percentile(lat, 1)))
	// p99 of a few hundred wake-ups on a shared machine moves by a few ms.
	recordFigure("wake-up across processes: p99, ms", msOf(percentile(lat, 0.99)), 5)
	return nil
}

// wakeTrial starts next (a `lm queue next` for agent b), runs add once
// waiting says next waits, and returns the time from the added
// instruction's created_at to its consumed_at.
func wakeTrial(next *exec.Cmd, waiting func() error, add *exec.Cmd) (time.Duration, error) {
	out, err := next.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := next.Start(); err != nil {
		return 0, err
	}
	defer next.Wait()
	err = waiting()
	var addOut []byte
	if err == nil {
		addOut, err = add.Output()
	}
	if err != nil {
		// Otherwise next would wait out its default_wait_seconds.
		next.Process.Kill()
		return 0, err
	}
	got, _ := io.ReadAll(out)
	var added struct {
		Item struct {
			CreatedAt time.Time `json:"created_at"`
		} `json:"item"`
	}
	var claimed struct {
		Instruction struct {
			ConsumedAt time.Time `json:"consumed_at"`
		} `json:"instruction"`
	}
	if json.Unmarshal(addOut, &added) != nil || json.Unmarshal(got, &claimed) != nil {
		return 0, fmt.Errorf("unexpected output %s / %s", addOut, got)
	}
	return claimed.Instruction.ConsumedAt.Sub(added.Item.CreatedAt), nil
}

// waitWaiting returns once agent b shows waiting, asking lm with the
// global flags given.
func waitWaiting(dir, lm string, global ...string) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		args := append(global, "queue", "status", "-r", "--jq", `.agents[] | select(.agent_id=="b") | .waiting`)
		out, _ := command(dir, lm, args...).Output()
		if strings.TrimSpace(string(out)) == "true" {
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return fmt.Errorf("the waiting consumer never showed as waiting")
}

func throughput(lm string) error {
	dir, done := home()
	defer done()
	const adds = 100_000
	var lines strings.Builder
	for i := range adds {
		fmt.Fprintf(&lines, "%q\n", fmt.Sprintf("instruction number %d: do the thing", i))
	}
	add := command(dir, lm, "queue", "add", "--jsonl")
	add.Stdin = strings.NewReader(lines.String())
	addTime := timeRun(add)

	const drains = 5_000
	if err := command(dir, lm, "queue", "config", "default_wait_seconds=0").Run(); err != nil {
		return err
	}
	session, err := startSession(command(dir, lm, "mcp"))
	if err != nil {
		return err
	}
	defer session.close()
	start := time.Now()
	for range drains {
		if _, err := session.call("get_user_request", `{}`); err != nil {
			return err
		}
	}
	drainTime := time.Since(start)
	floor, err := durableCommits(filepath.Join(dir, "floor.db"), drains)
	if err != nil {
		return err
	}
	shaped, err := claimShapedCommits(filepath.Join(dir, "shaped.db"), drains, adds)
	if err != nil {
		return err
	}
	fmt.Println("## Queue throughput")
	fmt.Println()
	fmt.Println("| what | rate | target |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| `lm queue add --jsonl`, %d instructions in one process | %.0f /s | ≥ 50,000 /s |\n", adds, adds/addTime.Seconds())
	rate := drains / drainTime.Seconds()
	fmt.Printf("| draining through `get_user_request`, one stdio session, %d calls | %.0f /s (%.2f × the claim-shaped floor) | ≥ 2,000 /s |\n",
		drains, rate, rate/shaped)
	fmt.Printf("| reference: bbolt open + one-key durable commit + close, same disk, in process | %.0f /s | |\n", floor)
	fmt.Printf("| reference: the same, rewriting what a claim must (head of a %d-key index, a record among %d, tails of two logs) | %.0f /s | |\n", adds, adds, shaped)
	fmt.Println()
	fmt.Println("Every `get_user_request` that delivers an instruction commits its claim durably before answering")
	fmt.Println("(bbolt writes the dirty pages, `fdatasync`s, writes the meta page, `fdatasync`s again). A claim must")
	fmt.Println("rewrite one root-to-leaf path in each of four B+trees (the pending index, the record, the consumed")
	fmt.Println("index, the event log), about 15 pages at this queue depth, where the one-key floor writes about 4.")
	fmt.Println("The claim-shaped row is that write alone, with none of the queue's logic: the distance between it")
	fmt.Println("and the drain rate is everything lm adds (MCP, JSON, the agent record); the distance between it and")
	fmt.Println("the target is the disk. Only a faster `fdatasync` or giving up durable claims closes the latter,")
	fmt.Println("and a claim that a crash can undo would deliver an instruction twice.")
	return nil
}

// durableCommits measures the fastest an open-per-transaction store can
// commit on this disk: open, put one key, commit (fsync), close.
func durableCommits(path string, n int) (float64, error) {
	return commitRate(path, n, func(tx *bolt.Tx, i int) error {
		b, err := tx.CreateBucketIfNotExists([]byte("floor"))
		if err != nil {
			return err
		}
		return b.Put(u64(i), make([]byte, 200))
	})
}

// claimShapedCommits measures a durable commit that rewrites what a claim
// must: the head of a pending index, one record among `pending` others, and
// the tails of a consumed index and an event log, each its own B+tree as in
// the queue's store, without any of the queue's logic.
func claimShapedCommits(path string, n, pending int) (float64, error) {
	trees := []string{"items", "pending", "consumed", "events"}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return 0, err
	}
	for done := 0; done < pending; done += 10_000 {
		err = db.Update(func(tx *bolt.Tx) error {
			for _, name := range trees {
				b, err := tx.CreateBucketIfNotExists([]byte(name))
				if err != nil {
					return err
				}
				for i := done; i < min(done+10_000, pending); i++ {
					if err := b.Put(u64(i), make([]byte, 250)); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			db.Close()
			return 0, err
		}
	}
	db.Close()
	return commitRate(path, n, func(tx *bolt.Tx, i int) error {
		if err := tx.Bucket([]byte("pending")).Delete(u64(i)); err != nil {
			return err
		}
		if err := tx.Bucket([]byte("items")).Put(u64(i), make([]byte, 260)); err != nil {
			return err
		}
		if err := tx.Bucket([]byte("consumed")).Put(u64(pending+i), make([]byte, 40)); err != nil {
			return err
		}
		return tx.Bucket([]byte("events")).Put(u64(pending+i), make([]byte, 350))
	})
}

// commitRate opens the store, runs one write transaction and closes it, n
// times, as every lm process does per transaction; it returns commits per
// second.
func commitRate(path string, n int, write func(tx *bolt.Tx, i int) error) (float64, error) {
	start := time.Now()
	for i := range n {
		db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, InitialMmapSize: 256 << 20})
		if err != nil {
			return 0, err
		}
		err = db.Update(func(tx *bolt.Tx) error { return write(tx, i) })
		db.Close()
		if err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

func u64(n int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

func mcpRoundTrip(lm string) error {
	dir, done := home()
	defer done()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	const n = 3000
	measure := func(cmd *exec.Cmd, tool, args string) (time.Duration, error) {
		s, err := startSession(cmd)
		if err != nil {
			return 0, err
		}
		defer s.close()
		var d []time.Duration
		for i := range n + 200 {
			start := time.Now()
			if _, err := s.call(tool, args); err != nil {
				return 0, err
			}
			if i >= 200 { // warm-up
				d = append(d, time.Since(start))
			}
		}
		return percentile(d, 0.5), nil
	}
	ref, err := measure(exec.Command(self, "echo-server"), "echo", `{"text":"hi"}`)
	if err != nil {
		return err
	}
	got, err := measure(command(dir, lm, "mcp"), "lm_version", `{}`)
	if err != nil {
		return err
	}
	fmt.Println("## MCP stdio round trip")
	fmt.Println()
	fmt.Printf("Median of %d sequential `tools/call` requests on one stdio session:\n\n", n)
	fmt.Println("| server | median | × reference | target |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| minimal mcp-go echo server (reference) | %.1f µs | 1.00 | |\n", float64(ref.Nanoseconds())/1000)
	fmt.Printf("| `lm mcp`, tool `lm_version` | %.1f µs | %.2f | ≤ 1.3 |\n", float64(got.Nanoseconds())/1000, float64(got)/float64(ref))
	recordFigure("stdio round trip: lm mcp / the mcp-go echo", float64(got)/float64(ref), 0.15)
	return nil
}

// session is a raw JSON-RPC conversation with a stdio MCP server.
type session struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	id  int
}

func startSession(cmd *exec.Cmd) (*session, error) {
	cmd.Stderr = os.Stderr
	in, out, err := startPiped(cmd, 1<<20)
	if err != nil {
		return nil, err
	}
	s := &session{cmd: cmd, in: in, out: out}
	if _, err := s.request("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"lmbench","version":"1"}}`); err != nil {
		return nil, err
	}
	fmt.Fprintln(s.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s, nil
}

// startPiped starts cmd with its stdin and stdout piped to us, stdout
// read through a buffer of bufSize bytes.
func startPiped(cmd *exec.Cmd, bufSize int) (io.WriteCloser, *bufio.Reader, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	return in, bufio.NewReaderSize(out, bufSize), nil
}

func (s *session) call(tool, args string) (string, error) {
	return s.request("tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args))
}

func (s *session) request(method, params string) (string, error) {
	s.id++
	if _, err := fmt.Fprintf(s.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", s.id, method, params); err != nil {
		return "", err
	}
	want := fmt.Sprintf(`"id":%d,`, s.id)
	for {
		line, err := s.out.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("%s: %w", method, err)
		}
		if strings.Contains(line, want) {
			if strings.Contains(line, `"isError":true`) || strings.Contains(line, `"error":{`) {
				return "", fmt.Errorf("%s failed: %s", method, line)
			}
			return line, nil
		}
	}
}

func (s *session) close() {
	s.in.Close()
	s.cmd.Wait()
}

// recordFigure appends one figure to the file $LMBENCH_FIGURES names (when
// it does): name, value and noise, tab-separated. scripts/bench.sh compares
// them with the figures of the committed BENCHMARKS.md (see compareFigures).
// A larger value is worse; noise is how much larger it may get on the same
// machine without anything having changed.
func recordFigure(name string, value, noise float64) {
	path := os.Getenv("LMBENCH_FIGURES")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lmbench: recording %s: %v\n", name, err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s\t%g\t%g\n", name, value, noise)
}
