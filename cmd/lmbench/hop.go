package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Sizes of the hop benchmark. Rounds interleave the paths, so a machine
// busy for a while slows each of them alike.
var (
	hopWarmup = envInt("LMBENCH_HOP_WARMUP", 200)
	hopCalls  = envInt("LMBENCH_HOP_CALLS", 1000) // per path and round
	hopRounds = envInt("LMBENCH_HOP_ROUNDS", 3)
)

// hopProtocol is the protocol version the bare client speaks: the newest
// every peer here accepts.
const hopProtocol = "2025-06-18"

// hopPath is one way of reaching the echo child.
type hopPath struct {
	name string
	// url is a streamable HTTP endpoint, or "stdio:COMMAND ARG..." for the
	// child itself.
	url  string
	tool string
	// missing says why the path could not be set up; the row says so.
	missing string
	lat     []time.Duration // the bare client's
	sdk     []time.Duration // the TypeScript SDK client's
}

// hopBench measures what each way of putting a stdio MCP server behind
// HTTP adds to one tools/call: lmbench's mcp-go echo server reached
// directly over stdio (the reference), over its own streamable HTTP, and
// through lm gateway (per server and aggregated), supergateway and the npm
// mcp-proxy, each fronting its own copy of the same child, beside the floor
// (rawProxy: net/http passing bytes to a child). One sequential
// call at a time from a bare JSON-RPC client (net/http, no MCP library)
// and from the TypeScript SDK's client. nodeBin holds supergateway,
// mcp-proxy and node.
func hopBench(lm, nodeBin string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, cleanup := home()
	defer cleanup()
	child := self + " echo-server"

	paths := []*hopPath{{name: "the child over stdio, directly (reference)", url: "stdio:" + child, tool: "echo"}}
	own, err := startServer(exec.Command(self, "http-echo-server", dir+"/own.addr"), dir+"/own.addr")
	if err != nil {
		return fmt.Errorf("start the echo server over HTTP: %w", err)
	}
	defer own.stop()
	paths = append(paths, &hopPath{name: "the same server over its own streamable HTTP (mcp-go)", url: own.base + "/mcp", tool: "echo"})
	floor, err := startServer(exec.Command(self, "raw-proxy", dir+"/raw.addr", self, "echo-server"), dir+"/raw.addr")
	if err != nil {
		return fmt.Errorf("start the minimal proxy: %w", err)
	}
	defer floor.stop()
	paths = append(paths, &hopPath{name: "minimal proxy: bare net/http passing bytes to its own child (floor)", url: floor.base + "/mcp", tool: "echo"})

	gw, _, err := startHubCommand(lm, dir, "echo", self, "echo-server")
	if err != nil {
		return err
	}
	defer gw.stop()
	paths = append(paths,
		&hopPath{name: "lm gateway `/mcp/echo`", url: gw.base + "/mcp/echo", tool: "echo"},
		&hopPath{name: "lm gateway `/mcp`, `echo__echo`", url: gw.base + "/mcp", tool: "echo__echo"})

	for _, peer := range []struct{ name, bin string }{{"supergateway 4.0.0", "supergateway"}, {"mcp-proxy 6.7.19 (npm)", "mcp-proxy"}} {
		p := &hopPath{name: peer.name, tool: "echo"}
		paths = append(paths, p)
		bin := filepath.Join(nodeBin, peer.bin)
		if _, err := os.Stat(bin); err != nil {
			p.missing = fmt.Sprintf("not installed (%s): npm ci --prefix testdata/node", bin)
			continue
		}
		port, err := freePort()
		if err != nil {
			return err
		}
		var cmd *exec.Cmd
		if peer.bin == "supergateway" {
			// Stateful: stateless, it starts a child for every request.
			cmd = exec.Command(bin, "--stdio", child, "--outputTransport", "streamableHttp", "--stateful", "--port", strconv.Itoa(port), "--logLevel", "none")
		} else {
			cmd = exec.Command(bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--server", "stream", "--", self, "echo-server")
		}
		cmd.Stdout, cmd.Stderr = nil, nil
		if err := cmd.Start(); err != nil {
			p.missing = fmt.Sprintf("does not start: %v", err)
			continue
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		p.url = fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
		if err := waitListening(port, 30*time.Second); err != nil {
			p.missing = err.Error()
		}
	}

	for round := range hopRounds {
		for _, p := range paths {
			if p.missing != "" {
				continue
			}
			lat, err := bareCalls(p.url, p.tool)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", p.name, round+1, err)
			}
			p.lat = append(p.lat, lat...)
		}
	}
	node := filepath.Join(nodeBin, "node")
	sdkMissing := ""
	if _, err := os.Stat(node); err != nil {
		sdkMissing = "node is not installed: npm ci --prefix testdata/node"
	}
	for _, p := range paths {
		if p.missing != "" || sdkMissing != "" {
			continue
		}
		if p.sdk, err = sdkCalls(node, p.url, p.tool); err != nil {
			return fmt.Errorf("%s, TypeScript SDK client: %w", p.name, err)
		}
	}
	printHop(paths, sdkMissing)
	return nil
}

func printHop(paths []*hopPath, sdkMissing string) {
	fmt.Println("## Hub: the hop, against the real peers")
	fmt.Println()
	fmt.Printf("One `tools/call` of an mcp-go echo server (`lmbench echo-server`) at a time, %d rounds of %d calls per path after %d to warm up, "+
		"the paths interleaved round by round; each proxy fronts its own copy of the same child over stdio. "+
		"The bare client is net/http and encoding/json, no MCP library; the SDK client is the official TypeScript SDK's (%d calls). "+
		"Added is over the child reached directly over stdio by the same client.\n\n", hopRounds, hopCalls, hopWarmup, hopCalls)
	ref := paths[0]
	fmt.Println("| path | bare p50 | bare p99 | added at p50 | SDK p50 | SDK p99 | SDK added at p50 |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, p := range paths {
		if p.missing != "" {
			fmt.Printf("| %s | %s | | | | | |\n", p.name, p.missing)
			continue
		}
		sdk := "| " + sdkMissing + " | | |"
		if len(p.sdk) > 0 {
			sdk = fmt.Sprintf("| %s | %s | %s |", ms(percentile(p.sdk, .5)), ms(percentile(p.sdk, .99)), addedOver(p.sdk, ref.sdk))
		}
		fmt.Printf("| %s | %s | %s | %s %s\n", p.name, ms(percentile(p.lat, .5)), ms(percentile(p.lat, .99)), addedOver(p.lat, ref.lat), sdk)
	}
	fmt.Println()
	addedAt := func(p *hopPath) time.Duration { return percentile(p.lat, .5) - percentile(ref.lat, .5) }
	httpDirect, floor, perServer, aggregated, super := paths[1], paths[2], paths[3], paths[4], paths[5]
	fmt.Printf("Target: lm adds at most 0.1 ms at p50 and at most 0.2× what supergateway adds; p99 no worse than the server's own HTTP (%s). ",
		ms(percentile(httpDirect.lat, .99)))
	fmt.Printf("Measured: lm adds %s per server and %s aggregated", added(addedAt(perServer)), added(addedAt(aggregated)))
	if super.missing == "" && addedAt(super) > 0 {
		fmt.Printf(", %.2f× and %.2f× what supergateway adds (%s)", float64(addedAt(perServer))/float64(addedAt(super)),
			float64(addedAt(aggregated))/float64(addedAt(super)), added(addedAt(super)))
	}
	fmt.Printf("; p99 %s and %s. ", ms(percentile(perServer.lat, .99)), ms(percentile(aggregated.lat, .99)))
	fmt.Printf("The minimal proxy, which only passes bytes between HTTP and its child, adds %s by itself; lm's own work beyond it is %s per server and %s aggregated.\n\n",
		added(addedAt(floor)), added(addedAt(perServer)-addedAt(floor)), added(addedAt(aggregated)-addedAt(floor)))
	// Regression checks, in ms. Runs on the same shared 2-core machine
	// moved p50 by 0.1 ms and p99 by several ms with nothing changed.
	recordFigure("hop: ms lm adds at p50 per server", msOf(addedAt(perServer)), 0.1)
	recordFigure("hop: ms lm adds at p50 aggregated", msOf(addedAt(aggregated)), 0.1)
	recordFigure("hop: lm's p99 per server, ms", msOf(percentile(perServer.lat, .99)), 5)
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// addedOver is how much p50 of lat exceeds p50 of ref.
func addedOver(lat, ref []time.Duration) string {
	if len(ref) == 0 {
		return "–"
	}
	if &lat[0] == &ref[0] {
		return "–"
	}
	return added(percentile(lat, .5) - percentile(ref, .5))
}

// bareCalls times hopCalls sequential tools/call requests after
// hopWarmup, from a bare JSON-RPC client.
func bareCalls(url, tool string) ([]time.Duration, error) {
	var rpc rpcConn
	var err error
	if cmdline, ok := strings.CutPrefix(url, "stdio:"); ok {
		rpc, err = dialStdio(strings.Fields(cmdline))
	} else {
		rpc, err = dialHTTP(url)
	}
	if err != nil {
		return nil, err
	}
	defer rpc.close()
	lat := make([]time.Duration, 0, hopCalls)
	for i := range hopWarmup + hopCalls {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"message":"m%d","text":"m%[3]d"}}}`, i+2, tool, i)
		began := time.Now()
		answer, err := rpc.request([]byte(body))
		if err != nil {
			return nil, err
		}
		if i >= hopWarmup {
			lat = append(lat, time.Since(began))
		}
		if !bytes.Contains(answer, []byte(`"result"`)) || bytes.Contains(answer, []byte(`"isError":true`)) {
			return nil, fmt.Errorf("%s answered %s", tool, answer)
		}
	}
	return lat, nil
}

// rpcConn sends one JSON-RPC request and returns its response.
type rpcConn interface {
	request(body []byte) ([]byte, error)
	close()
}

const hopInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + hopProtocol +
	`","capabilities":{},"clientInfo":{"name":"lmbench","version":"1"}}}`

const hopInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

type stdioConn struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func dialStdio(argv []string) (*stdioConn, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	in, out, err := startPiped(cmd, 64<<10)
	if err != nil {
		return nil, err
	}
	c := &stdioConn{cmd: cmd, in: in, out: out}
	if _, err := c.request([]byte(hopInitialize)); err != nil {
		c.close()
		return nil, err
	}
	if _, err := io.WriteString(in, hopInitialized+"\n"); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// request writes one line and reads lines until the response (a line
// with a result or an error), passing over notifications.
func (c *stdioConn) request(body []byte) ([]byte, error) {
	if _, err := c.in.Write(append(body, '\n')); err != nil {
		return nil, err
	}
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("reading the child's answer: %w", err)
		}
		if bytes.Contains(line, []byte(`"result"`)) || bytes.Contains(line, []byte(`"error"`)) {
			return line, nil
		}
	}
}

func (c *stdioConn) close() {
	c.in.Close()
	c.cmd.Wait()
}

type httpConn struct {
	url, session string
	client       *http.Client
}

func dialHTTP(url string) (*httpConn, error) {
	c := &httpConn{url: url, client: &http.Client{Timeout: time.Minute}}
	if _, err := c.request([]byte(hopInitialize)); err != nil {
		return nil, fmt.Errorf("initialize %s: %w", url, err)
	}
	if _, err := c.request([]byte(hopInitialized)); err != nil {
		return nil, fmt.Errorf("initialized %s: %w", url, err)
	}
	return c, nil
}

// request POSTs one message; a response streamed as server-sent events is
// read to its JSON-RPC response.
func (c *httpConn) request(body []byte) ([]byte, error) {
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", hopProtocol)
	}
	res, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if id := res.Header.Get("Mcp-Session-Id"); id != "" {
		c.session = id
	}
	if res.StatusCode == http.StatusAccepted {
		io.Copy(io.Discard, res.Body)
		return nil, nil
	}
	if res.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(res.Body)
		return nil, fmt.Errorf("%s: %s", res.Status, data)
	}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		return io.ReadAll(res.Body)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok && bytes.Contains(data, []byte(`"id"`)) {
			out := bytes.Clone(data)
			io.Copy(io.Discard, res.Body)
			return out, nil
		}
	}
	return nil, errors.New("the event stream ended without a response")
}

func (c *httpConn) close() {
	if c.session == "" {
		return
	}
	req, err := http.NewRequest(http.MethodDelete, c.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", c.session)
	if res, err := c.client.Do(req); err == nil {
		res.Body.Close()
	}
}

// sdkCalls times hopCalls calls from the TypeScript SDK's client.
func sdkCalls(node, url, tool string) ([]time.Duration, error) {
	script, err := filepath.Abs("testdata/node/clients/callloop.mjs")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node, script, url, tool, strconv.Itoa(hopWarmup), strconv.Itoa(hopCalls))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, stderr.Bytes())
	}
	var ns []int64
	if err := json.Unmarshal(out, &ns); err != nil {
		return nil, fmt.Errorf("the SDK client printed %q: %w", out, err)
	}
	lat := make([]time.Duration, len(ns))
	for i, n := range ns {
		lat[i] = time.Duration(n)
	}
	return lat, nil
}

// startHubCommand starts lm gateway with one auto-start stdio server and
// returns once it is running.
func startHubCommand(lm, dir, name, command string, args ...string) (*httpProcess, time.Duration, error) {
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{name: map[string]any{"command": command, "args": args, "auto_start": true}}})
	if err := os.WriteFile(filepath.Join(dir, "servers.json"), data, 0o600); err != nil {
		return nil, 0, err
	}
	return startHubConfigured(lm, dir, 1)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitListening waits until something accepts connections on port.
func waitListening(port int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("nothing listened on port %d after %s", port, limit)
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
