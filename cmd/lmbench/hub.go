package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// Sizes of the hub benchmark.
const (
	hubWarmup    = 200
	hubCalls     = 2000 // sequential calls per path, for the latency percentiles
	hubClients   = 16
	hubLoadFor   = 3 * time.Second
	hubChildren  = 5
	hubReadyWait = 2 * time.Minute
)

// hubBench measures what the gateway adds to a tools/call of a trivial tool
// (server-everything's echo): the same child is reached directly over
// stdio (the reference) and through lm gateway, per server at
// /mcp/everything and aggregated at /mcp. Two more references, driven by
// the same client, tell what of the added time is the HTTP transport (a
// bare mcp-go HTTP echo server) and what any proxy pays (the same server
// forwarding to the child), so what remains is the hub's own. Then the gateway's memory with
// five children and its time until every auto-start server is ready.
func hubBench(lm, everything string) error {
	ctx := context.Background()
	fmt.Println("## Hub: MCP proxy overhead")
	fmt.Println()
	fmt.Printf("`tools/call` of server-everything's `echo`: %d sequential calls after %d to warm up, then %d concurrent clients for %s. "+
		"The reference is an mcp-go client talking to the same server directly over stdio, in the same run; "+
		"the transport reference is a bare mcp-go streamable-HTTP server in Go with the same echo, and the proxy reference is that server "+
		"forwarding each call to its own copy of the child over stdio, both driven by the same client.\n\n",
		hubCalls, hubWarmup, hubClients, hubLoadFor)

	self, err := os.Executable()
	if err != nil {
		return err
	}
	directReady := time.Now()
	direct, err := client.NewStdioMCPClient(everything, nil)
	if err != nil {
		return fmt.Errorf("start %s: %w", everything, err)
	}
	defer direct.Close()
	if err := initialize(ctx, direct); err != nil {
		return err
	}
	directStart := time.Since(directReady)
	ref, err := measureCalls(func() (*client.Client, error) { return direct, nil }, "echo", true)
	if err != nil {
		return fmt.Errorf("direct: %w", err)
	}

	dir, cleanup := home()
	defer cleanup()
	bare, err := startServer(exec.Command(self, "http-echo-server", dir+"/echo.addr"), dir+"/echo.addr")
	if err != nil {
		return fmt.Errorf("start the bare HTTP echo server: %w", err)
	}
	transportRef, err := measureCalls(func() (*client.Client, error) { return httpClient(ctx, bare.base+"/mcp") }, "echo", false)
	bare.stop()
	if err != nil {
		return fmt.Errorf("bare HTTP echo: %w", err)
	}
	minimal, err := startServer(exec.Command(self, "http-echo-server", dir+"/proxy.addr", everything), dir+"/proxy.addr")
	if err != nil {
		return fmt.Errorf("start the minimal proxy: %w", err)
	}
	proxyRef, err := measureCalls(func() (*client.Client, error) { return httpClient(ctx, minimal.base+"/mcp") }, "echo", false)
	minimal.stop()
	if err != nil {
		return fmt.Errorf("minimal proxy: %w", err)
	}

	gw, ready, err := startHub(lm, dir, map[string]string{"everything": everything})
	if err != nil {
		return err
	}
	perServer, err := measureCalls(func() (*client.Client, error) { return httpClient(ctx, gw.base+"/mcp/everything") }, "echo", false)
	if err != nil {
		gw.stop()
		return fmt.Errorf("/mcp/everything: %w", err)
	}
	aggregated, err := measureCalls(func() (*client.Client, error) { return httpClient(ctx, gw.base+"/mcp") }, "everything__echo", false)
	gw.stop()
	if err != nil {
		return fmt.Errorf("/mcp: %w", err)
	}

	fmt.Println("| path | p50 | p99 | added at p50 | added at p99 | calls/s, 16 clients | vs direct |")
	fmt.Println("|---|---|---|---|---|---|---|")
	row := func(name string, r callStats) {
		fmt.Printf("| %s | %s | %s | %s | %s | %.0f | %.2f× |\n", name, ms(r.p50), ms(r.p99), added(r.p50-ref.p50), added(r.p99-ref.p99), r.rate, r.rate/ref.rate)
	}
	fmt.Printf("| direct over stdio (reference) | %s | %s | – | – | %.0f | 1.00× |\n", ms(ref.p50), ms(ref.p99), ref.rate)
	fmt.Printf("| bare mcp-go streamable-HTTP echo, no child (transport reference) | %s | %s | – | – | %.0f | %.2f× |\n",
		ms(transportRef.p50), ms(transportRef.p99), transportRef.rate, transportRef.rate/ref.rate)
	row("minimal proxy: the bare server forwarding to the child (proxy reference)", proxyRef)
	row("gateway `/mcp/everything`", perServer)
	row("gateway `/mcp` (`everything__echo`)", aggregated)
	fmt.Println()
	fmt.Printf("Target: at most 0.30 ms added at p50. Measured: %s per server, %s aggregated. "+
		"The minimal proxy, which does nothing but forward, already adds %s: loopback HTTP and mcp-go's transport (%s for a whole "+
		"round trip through the bare server) and a child that now idles between calls instead of answering them back to back. "+
		"The hub's own work, beyond the minimal proxy, is %s per server and %s aggregated.\n\n",
		added(perServer.p50-ref.p50), added(aggregated.p50-ref.p50), added(proxyRef.p50-ref.p50), ms(transportRef.p50),
		added(perServer.p50-proxyRef.p50), added(aggregated.p50-proxyRef.p50))

	// Memory and readiness with five children.
	dir5, cleanup5 := home()
	defer cleanup5()
	children := map[string]string{}
	for i := 1; i <= hubChildren; i++ {
		children[fmt.Sprintf("everything%d", i)] = everything
	}
	gw5, ready5, err := startHub(lm, dir5, children)
	if err != nil {
		return err
	}
	rss5, _ := gw5.memory()
	var childRSS int64
	for _, pid := range childPids(gw5.base) {
		childRSS += processRSS(pid)
	}
	gw5.stop()
	dir0, cleanup0 := home()
	defer cleanup0()
	gw0, ready0, err := startHub(lm, dir0, nil)
	if err != nil {
		return err
	}
	rss0, _ := gw0.memory()
	gw0.stop()

	fmt.Println("| gateway | resident memory (gateway only) | vs no children | children's memory | start → all auto-start servers ready | vs one child started directly |")
	fmt.Println("|---|---|---|---|---|---|")
	fmt.Printf("| no servers | %d MiB | 1.00× | – | %s | – |\n", rss0/1024, ms(ready0))
	fmt.Printf("| 1 child | – | – | – | %s | %.2f× (direct: %s) |\n", ms(ready), float64(ready)/float64(directStart), ms(directStart))
	fmt.Printf("| %d children | %d MiB | %.2f× | %d MiB | %s | %.2f× |\n", hubChildren, rss5/1024, float64(rss5)/float64(rss0), childRSS/1024, ms(ready5), float64(ready5)/float64(directStart))
	fmt.Println()
	fmt.Println("Start → ready is from launching `lm gateway` until `GET /health` reports every auto-start server running " +
		"(children start in parallel); the reference starts the same server directly and completes the MCP handshake.")
	fmt.Println()
	return nil
}

func added(d time.Duration) string {
	return fmt.Sprintf("%+.3f ms", float64(d.Nanoseconds())/1e6)
}

func initialize(ctx context.Context, cl *client.Client) error {
	ictx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err := cl.Initialize(ictx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "lmbench", Version: "1"},
	}})
	return err
}

func httpClient(ctx context.Context, url string) (*client.Client, error) {
	cl, err := client.NewStreamableHttpClient(url)
	if err != nil {
		return nil, err
	}
	if err := cl.Start(ctx); err != nil {
		return nil, err
	}
	if err := initialize(ctx, cl); err != nil {
		cl.Close()
		return nil, err
	}
	return cl, nil
}

type callStats struct {
	p50, p99 time.Duration
	rate     float64
}

// measureCalls times sequential calls from one client, then counts the
// calls hubClients concurrent clients complete in hubLoadFor. shared says
// the clients are one session (a stdio child has one pipe).
func measureCalls(connect func() (*client.Client, error), tool string, shared bool) (callStats, error) {
	var st callStats
	cl, err := connect()
	if err != nil {
		return st, err
	}
	var seq atomic.Int64
	callOnce := func(c *client.Client) error {
		// Distinct arguments, so no cache could answer.
		n := seq.Add(1)
		res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: map[string]any{"message": fmt.Sprint("m", n)}}})
		if err == nil && res.IsError {
			err = fmt.Errorf("%s answered an error: %+v", tool, res.Content)
		}
		return err
	}
	for range hubWarmup {
		if err := callOnce(cl); err != nil {
			return st, err
		}
	}
	lat := make([]time.Duration, 0, hubCalls)
	for range hubCalls {
		began := time.Now()
		if err := callOnce(cl); err != nil {
			return st, err
		}
		lat = append(lat, time.Since(began))
	}
	st.p50, st.p99 = percentile(lat, 0.50), percentile(lat, 0.99)

	clients := make([]*client.Client, hubClients)
	for i := range clients {
		if shared {
			clients[i] = cl
		} else if clients[i], err = connect(); err != nil {
			return st, err
		}
	}
	var done atomic.Int64
	var failed error
	var once sync.Once
	deadline := time.Now().Add(hubLoadFor)
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if err := callOnce(c); err != nil {
					once.Do(func() { failed = err })
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	st.rate = float64(done.Load()) / hubLoadFor.Seconds()
	if !shared {
		for _, c := range clients {
			c.Close()
		}
		cl.Close()
	}
	return st, failed
}

// startHub starts lm gateway with the given auto-start stdio servers and
// returns once GET /health says every one is running, with the time that
// took from launch.
func startHub(lm, dir string, children map[string]string) (*httpProcess, time.Duration, error) {
	cfg := map[string]any{}
	for name, bin := range children {
		cfg[name] = map[string]any{"command": bin, "auto_start": true}
	}
	data, _ := json.Marshal(map[string]any{"mcpServers": cfg})
	if err := os.WriteFile(filepath.Join(dir, "servers.json"), data, 0o600); err != nil {
		return nil, 0, err
	}
	return startHubConfigured(lm, dir, len(children))
}

// startHubConfigured starts lm gateway on dir's servers.json and returns
// once GET /health says its n servers are running, with the time that
// took from launch.
func startHubConfigured(lm, dir string, n int) (*httpProcess, time.Duration, error) {
	began := time.Now()
	// Without tokens, as the reference server it is compared with.
	gw, err := startServer(command(dir, lm, "gateway", "--no-token", "--addr", "127.0.0.1:0", "--addr-file", dir+"/gw.addr"), dir+"/gw.addr")
	if err != nil {
		return nil, 0, err
	}
	for time.Since(began) < hubReadyWait {
		var health struct {
			Servers []struct {
				State string `json:"state"`
			} `json:"servers"`
		}
		if res, err := http.Get(gw.base + "/health"); err == nil {
			json.NewDecoder(res.Body).Decode(&health)
			res.Body.Close()
			running := 0
			for _, s := range health.Servers {
				if s.State == "running" {
					running++
				}
			}
			if running == n {
				return gw, time.Since(began), nil
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	gw.stop()
	return nil, 0, fmt.Errorf("the gateway's servers were not all running after %s", hubReadyWait)
}

// childPids are the supervised children's process ids.
func childPids(base string) []int {
	res, err := http.Get(base + "/servers")
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	var out struct {
		Servers []struct {
			Pid int `json:"pid"`
		} `json:"servers"`
	}
	json.NewDecoder(res.Body).Decode(&out)
	var pids []int
	for _, s := range out.Servers {
		if s.Pid > 0 {
			pids = append(pids, s.Pid)
		}
	}
	return pids
}

// processRSS is a process's resident set in KiB.
func processRSS(pid int) int64 {
	var kb int64
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
		}
	}
	return kb
}
