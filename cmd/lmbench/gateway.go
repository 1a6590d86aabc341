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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// jsonServer is the reference for the gateway's HTTP API: a minimal
// net/http server answering the same two routes with encoding/json and a
// counter (it keeps no instructions, so its memory measures HTTP and JSON
// alone). It writes its address to addrFile.
func jsonServer(addrFile string) error {
	type item struct {
		ID        string    `json:"id"`
		Content   string    `json:"content"`
		Status    string    `json:"status"`
		CreatedAt time.Time `json:"created_at"`
		Position  int       `json:"position"`
	}
	var (
		mu    sync.Mutex
		count int
	)
	writeJSON := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	started := time.Now().UTC()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		pending := count
		mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{
			"server": map[string]any{"status": "up", "started_at": started},
			"queue":  map[string]any{"pending_count": pending, "consumed_count": 0},
		})
	})
	mux.HandleFunc("POST /api/instructions", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Content string `json:"content"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 2<<20)).Decode(&in); err != nil || in.Content == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"success": false, "error": "content is required"})
			return
		}
		mu.Lock()
		count++
		it := item{ID: strconv.Itoa(count), Content: in.Content, Status: "pending", CreatedAt: time.Now().UTC(), Position: count}
		mu.Unlock()
		writeJSON(w, http.StatusCreated, map[string]any{"item": it, "count": 1})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if err := os.WriteFile(addrFile, []byte(ln.Addr().String()), 0o600); err != nil {
		return err
	}
	return http.Serve(ln, mux)
}

// httpProcess is a process serving HTTP on loopback for the benchmark.
type httpProcess struct {
	cmd  *exec.Cmd
	base string
}

// startServer runs cmd, which must write its address to addrFile.
func startServer(cmd *exec.Cmd, addrFile string) (*httpProcess, error) {
	// /dev/null: a pipe would make lmbench read every line the server logs.
	cmd.Stderr = nil
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if addr, err := os.ReadFile(addrFile); err == nil && len(bytes.TrimSpace(addr)) > 0 {
			return &httpProcess{cmd: cmd, base: "http://" + strings.TrimSpace(string(addr))}, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	return nil, fmt.Errorf("%v did not start serving", cmd.Args)
}

// stop asks the server to shut down, by SIGTERM: a shell starts background
// commands with SIGINT ignored, and a Go program keeps it so. One that has
// not exited after a few seconds is killed.
func (s *httpProcess) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.AfterFunc(5*time.Second, func() { s.cmd.Process.Kill() })
	defer timer.Stop()
	s.cmd.Wait()
}

// memory is the server's resident set now and at its peak, in KiB.
func (s *httpProcess) memory() (rss, peak int64) {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	for _, line := range strings.Split(string(data), "\n") {
		field, value, _ := strings.Cut(line, ":")
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		switch field {
		case "VmRSS":
			rss = kb
		case "VmHWM":
			peak = kb
		}
	}
	return rss, peak
}

// loadResult is what `clients` concurrent loopback clients achieved.
type loadResult struct {
	rate float64
	p50  time.Duration
	p99  time.Duration
}

// load sends method url (with body) from clients concurrent clients for
// d, after a warm-up, and checks every answer has status want.
func load(method, url, body string, want, clients int, d time.Duration) (loadResult, error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	send := func() error {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != want {
			return fmt.Errorf("%s %s: status %d, want %d", method, url, resp.StatusCode, want)
		}
		return nil
	}
	run := func(d time.Duration) ([]time.Duration, error) {
		var (
			mu       sync.Mutex
			all      []time.Duration
			firstErr error
			wg       sync.WaitGroup
		)
		stop := time.Now().Add(d)
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine []time.Duration
				var err error
				for time.Now().Before(stop) {
					start := time.Now()
					if err = send(); err != nil {
						break
					}
					mine = append(mine, time.Since(start))
				}
				mu.Lock()
				all = append(all, mine...)
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
		return all, firstErr
	}
	if _, err := run(d / 5); err != nil { // warm-up: connections, caches
		return loadResult{}, err
	}
	lat, err := run(d)
	if err != nil {
		return loadResult{}, err
	}
	return loadResult{rate: float64(len(lat)) / d.Seconds(), p50: percentile(lat, 0.5), p99: percentile(lat, 0.99)}, nil
}

// sseClient is one open GET /api/events stream.
type sseClient struct {
	resp *http.Response
	done chan struct{}
}

// connectSSE opens n event streams and returns once each has its first
// bytes, which the gateway sends after registering the stream; every
// instruction.created event's delivery latency (receipt minus the event's
// transaction time) goes to deliveries.
func connectSSE(base string, n int, deliveries chan<- time.Duration) ([]*sseClient, error) {
	transport := &http.Transport{MaxIdleConnsPerHost: n}
	var clients []*sseClient
	for range n {
		resp, err := (&http.Client{Transport: transport}).Get(base + "/api/events")
		if err != nil {
			closeSSE(clients)
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			closeSSE(clients)
			return nil, fmt.Errorf("GET /api/events: status %d", resp.StatusCode)
		}
		r := bufio.NewReader(resp.Body)
		if _, err := r.ReadString('\n'); err != nil { // "retry: …"
			resp.Body.Close()
			closeSSE(clients)
			return nil, err
		}
		c := &sseClient{resp: resp, done: make(chan struct{})}
		go c.read(r, deliveries)
		clients = append(clients, c)
	}
	return clients, nil
}

func (c *sseClient) read(r *bufio.Reader, deliveries chan<- time.Duration) {
	defer close(c.done)
	event := ""
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		received := time.Now()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event: "))
		case strings.HasPrefix(line, "data: ") && event == "instruction.created":
			var e struct {
				Timestamp time.Time `json:"timestamp"`
			}
			if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e) == nil {
				deliveries <- received.Sub(e.Timestamp)
			}
		}
	}
}

func closeSSE(clients []*sseClient) {
	for _, c := range clients {
		c.resp.Body.Close()
		<-c.done
	}
}

// fanOut adds trials instructions, each with `lm queue add` in its own
// process, and collects every stream's delivery latency.
func fanOut(dir, lm string, clients []*sseClient, deliveries <-chan time.Duration, trials int) ([]time.Duration, error) {
	var lat []time.Duration
	for i := range trials {
		if out, err := command(dir, lm, "queue", "add", fmt.Sprintf("fan-out %d", i)).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("lm queue add: %v: %s", err, out)
		}
		timeout := time.After(10 * time.Second)
		for range clients {
			select {
			case d := <-deliveries:
				lat = append(lat, d)
			case <-timeout:
				return nil, errors.New("an event stream missed an added instruction")
			}
		}
	}
	return lat, nil
}

// gatewayBench measures lm gateway against the reference JSON server.
func gatewayBench(lm string) error {
	dir, done := home()
	defer done()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ref, err := startServer(exec.Command(self, "json-server", dir+"/ref.addr"), dir+"/ref.addr")
	if err != nil {
		return err
	}
	defer ref.stop()
	// Without tokens, as the reference server it is compared with.
	gw, err := startServer(command(dir, lm, "gateway", "--no-token", "--addr", "127.0.0.1:0", "--addr-file", dir+"/gw.addr"), dir+"/gw.addr")
	if err != nil {
		return err
	}
	defer gw.stop()

	const clients, duration = 32, 3 * time.Second
	if _, err := load("GET", gw.base+"/api/status", "", 200, 1, 200*time.Millisecond); err != nil {
		return err
	}
	gwIdle, _ := gw.memory()
	refIdle, _ := ref.memory()
	type row struct {
		what      string
		got, base loadResult
	}
	var rows []row
	for _, r := range []struct {
		what, method, path, body string
		status                   int
	}{
		{"`GET /api/status`", "GET", "/api/status", "", 200},
		{"`POST /api/instructions`", "POST", "/api/instructions", `{"content":"benchmark instruction"}`, 201},
	} {
		base, err := load(r.method, ref.base+r.path, r.body, r.status, clients, duration)
		if err != nil {
			return fmt.Errorf("reference: %w", err)
		}
		got, err := load(r.method, gw.base+r.path, r.body, r.status, clients, duration)
		if err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
		rows = append(rows, row{r.what, got, base})
	}
	_, gwLoadPeak := gw.memory()
	_, refLoadPeak := ref.memory()

	deliveries := make(chan time.Duration, 1024)
	type fan struct {
		clients, trials int
		lat             []time.Duration
		rss             int64
	}
	fans := []fan{{clients: 1, trials: 200}, {clients: 50, trials: 40}, {clients: 200, trials: 20}}
	for i := range fans {
		streams, err := connectSSE(gw.base, fans[i].clients, deliveries)
		if err != nil {
			return err
		}
		fans[i].lat, err = fanOut(dir, lm, streams, deliveries, fans[i].trials)
		fans[i].rss, _ = gw.memory()
		closeSSE(streams)
		if err != nil {
			return err
		}
	}

	fmt.Println("## Gateway")
	fmt.Println()
	fmt.Printf("HTTP API under %d concurrent loopback clients for %s each, against a minimal net/http + encoding/json server "+
		"answering the same routes without storing anything (reference). The gateway commits every added instruction to the store on disk.\n\n", clients, duration)
	fmt.Println("| request | gateway | reference | × reference | gateway p50 / p99 | reference p50 / p99 |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %.0f /s | %.0f /s | %.2f | %s / %s | %s / %s |\n", r.what, r.got.rate, r.base.rate, r.got.rate/r.base.rate,
			ms(r.got.p50), ms(r.got.p99), ms(r.base.p50), ms(r.base.p99))
	}
	fmt.Println()
	fmt.Println("Add-to-page latency: `lm queue add` in another process → the `instruction.created` event read by every connected " +
		"`/api/events` client, from the add's transaction time to receipt:")
	fmt.Println()
	fmt.Println("| SSE clients | trials | deliveries | p50 | p99 | max | target p99 |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, f := range fans {
		fmt.Printf("| %d | %d | %d | %s | %s | %s | ≤ 50 ms |\n", f.clients, f.trials, len(f.lat), ms(percentile(f.lat, 0.5)), ms(percentile(f.lat, 0.99)), ms(percentile(f.lat, 1)))
	}
	fmt.Println()
	fmt.Println("| resident memory | gateway | reference | × reference |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| idle | %s | %s | %.2f |\n", mib(gwIdle), mib(refIdle), float64(gwIdle)/float64(refIdle))
	fmt.Printf("| peak under the HTTP load | %s | %s | %.2f |\n", mib(gwLoadPeak), mib(refLoadPeak), float64(gwLoadPeak)/float64(refLoadPeak))
	for _, f := range fans[1:] {
		fmt.Printf("| with %d SSE clients | %s | | |\n", f.clients, mib(f.rss))
	}
	return nil
}

func mib(kb int64) string { return fmt.Sprintf("%.1f MiB", float64(kb)/1024) }
