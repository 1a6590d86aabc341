// Package agentload puts many agents on one gateway: each an MCP session
// on /mcp looping get_user_request, while producers add instructions over
// HTTP (POST /api/instructions) and with `lm queue add --jsonl`. It checks
// that every instruction is delivered exactly once and times each from its
// add to its delivery. The many-agents test and lmbench share it.
package agentload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Config is one run.
type Config struct {
	// URL is the gateway's base URL; Token its bearer token ("" with
	// --no-token).
	URL, Token string
	// More are further gateways' base URLs, serving the same queue (a
	// database) with the same token: agent i and HTTP producer i use the
	// i-th of URL and More, round the list.
	More []string
	// Agents is how many MCP sessions loop get_user_request.
	Agents int
	// Backlog instructions are added in one `lm queue add --jsonl` before
	// the agents start: with no producers, a run measures how fast the
	// agents take a full queue. They are not timed.
	Backlog int
	// HTTPAdds instructions are added one per POST by HTTPProducers
	// concurrent producers; CLIAdds by `lm queue add --jsonl`, CLIBatch a
	// process.
	HTTPAdds, HTTPProducers, CLIAdds, CLIBatch int
	// LM is the lm binary and Env its environment, for the CLI's adds.
	LM  string
	Env []string
	// Timeout bounds the run: instructions not delivered by then are
	// reported missing.
	Timeout time.Duration
}

// gateway is the base URL agent or producer i uses.
func (c Config) gateway(i int) string {
	if i%(1+len(c.More)) == 0 {
		return c.URL
	}
	return c.More[i%(1+len(c.More))-1]
}

// Result is what a run saw.
type Result struct {
	Added, Delivered int
	// Elapsed is from the first add to the last delivery; Adding, from the
	// first add to the last add's answer, the producers' own pace.
	Elapsed, Adding time.Duration
	// Latency is each instruction's time from just before its add was sent
	// to its delivery to an agent; HTTPLatency and CLILatency split it by
	// the producer that added it (a CLI batch's time includes starting its
	// process and taking the store's lock).
	Latency, HTTPLatency, CLILatency []time.Duration
}

// Run runs cfg. An instruction delivered twice, or not at all, fails the
// run: the error names them.
func Run(ctx context.Context, cfg Config) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Agents + cfg.HTTPProducers}}
	defer httpc.CloseIdleConnections()

	if err := addBacklog(ctx, cfg); err != nil {
		return Result{}, err
	}
	agents := make([]*client.Client, cfg.Agents)
	for i := range agents {
		cl, err := connect(ctx, cfg, httpc, cfg.gateway(i), fmt.Sprintf("agent-%d", i))
		if err != nil {
			return Result{}, fmt.Errorf("agent %d: %w", i, err)
		}
		defer cl.Close()
		agents[i] = cl
	}

	total := cfg.Backlog + cfg.HTTPAdds + cfg.CLIAdds
	var mu sync.Mutex
	sent := make(map[string]time.Time, total)
	for i := range cfg.Backlog {
		sent[backlogContent(i)] = time.Time{}
	}
	delivered := make(map[string]int, total)
	var latency, httpLatency, cliLatency []time.Duration
	var last time.Time
	all := make(chan struct{})
	deliver := func(content string) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		delivered[content]++
		if at, ok := sent[content]; ok && !at.IsZero() && delivered[content] == 1 {
			latency = append(latency, now.Sub(at))
			if strings.HasPrefix(content, httpPrefix) {
				httpLatency = append(httpLatency, now.Sub(at))
			} else {
				cliLatency = append(cliLatency, now.Sub(at))
			}
		}
		last = now
		if len(delivered) == total {
			close(all)
		}
	}
	stamp := func(contents ...string) {
		now := time.Now()
		mu.Lock()
		for _, c := range contents {
			sent[c] = now
		}
		mu.Unlock()
	}

	agentCtx, stopAgents := context.WithCancel(ctx)
	var agentErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for i, cl := range agents {
		wg.Go(func() {
			for agentCtx.Err() == nil {
				content, err := next(agentCtx, cl, fmt.Sprintf("agent-%d", i))
				switch {
				case agentCtx.Err() != nil:
					return
				case err != nil:
					errOnce.Do(func() { agentErr = fmt.Errorf("agent %d: %w", i, err) })
					stopAgents()
					return
				case content != "":
					deliver(content)
				}
			}
		})
	}

	began := time.Now()
	produceErr := produce(ctx, cfg, httpc, stamp)
	adding := time.Since(began)
	if produceErr == nil {
		select {
		case <-all:
		case <-ctx.Done():
		case <-agentCtx.Done():
		}
	}
	stopAgents()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	res := Result{Added: len(sent), Delivered: len(delivered), Elapsed: last.Sub(began), Adding: adding,
		Latency: latency, HTTPLatency: httpLatency, CLILatency: cliLatency}
	// A delivery made twice fails the run even when the producers or an
	// agent failed first: what was delivered is checked whatever ended it.
	var twice, missing []string
	for c, n := range delivered {
		if n > 1 {
			twice = append(twice, fmt.Sprintf("%s (%d times)", c, n))
		}
	}
	if len(twice) > 0 {
		return res, fmt.Errorf("%w: delivered more than once: %s", ErrNotExactlyOnce, summary(twice))
	}
	if err := errors.Join(produceErr, agentErr); err != nil {
		return res, err
	}
	for c := range sent {
		if delivered[c] == 0 {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 || len(delivered) != total {
		return res, fmt.Errorf("%w: %d of %d delivered; never delivered: %s",
			ErrNotExactlyOnce, len(delivered), total, summary(missing))
	}
	return res, nil
}

// ErrNotExactlyOnce is a run in which an instruction was delivered twice,
// or an added one never: the queue's promise broken, not a load it could
// not carry.
var ErrNotExactlyOnce = errors.New("not exactly once")

func summary(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	if len(items) > 5 {
		return fmt.Sprintf("%s and %d more", strings.Join(items[:5], ", "), len(items)-5)
	}
	return strings.Join(items, ", ")
}

// connect opens an agent's MCP session on /mcp.
func connect(ctx context.Context, cfg Config, httpc *http.Client, base, name string) (*client.Client, error) {
	opts := []transport.StreamableHTTPCOption{transport.WithHTTPBasicClient(httpc)}
	if cfg.Token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + cfg.Token}))
	}
	cl, err := client.NewStreamableHttpClient(base+"/mcp", opts...)
	if err != nil {
		return nil, err
	}
	if err := cl.Start(ctx); err != nil {
		return nil, err
	}
	if _, err := cl.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: name, Version: "1"},
	}}); err != nil {
		cl.Close()
		return nil, err
	}
	return cl, nil
}

// next calls get_user_request once: the content delivered, or "" when the
// wait ended empty.
func next(ctx context.Context, cl *client.Client, agent string) (string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = "get_user_request"
	req.Params.Arguments = map[string]any{"agent_id": agent}
	res, err := cl.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("get_user_request failed: %+v", res.Content)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return "", err
	}
	var out struct {
		Instruction *struct {
			Content string `json:"content"`
		} `json:"instruction"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return "", err
	}
	if out.Instruction == nil {
		return "", nil
	}
	return out.Instruction.Content, nil
}

// addBacklog adds cfg.Backlog instructions with one `lm queue add --jsonl`.
func addBacklog(ctx context.Context, cfg Config) error {
	if cfg.Backlog == 0 {
		return nil
	}
	var lines bytes.Buffer
	for i := range cfg.Backlog {
		fmt.Fprintf(&lines, "%q\n", backlogContent(i))
	}
	return addCLI(ctx, cfg, &lines)
}

func backlogContent(i int) string { return fmt.Sprintf("backlog-%d", i) }

// addCLI adds the JSON Lines in lines with `lm queue add --jsonl`.
func addCLI(ctx context.Context, cfg Config, lines *bytes.Buffer) error {
	cmd := exec.CommandContext(ctx, cfg.LM, "queue", "add", "--jsonl")
	cmd.Env, cmd.Stdin = cfg.Env, lines
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("lm queue add --jsonl: %v: %s", err, out)
	}
	return nil
}

// httpPrefix starts the content of instructions added over HTTP; the
// CLI's start with "cli-".
const httpPrefix = "http-"

// produce adds every instruction: the HTTP producers and the CLI's batches
// at once.
func produce(ctx context.Context, cfg Config, httpc *http.Client, stamp func(...string)) error {
	var wg sync.WaitGroup
	errs := make(chan error, cfg.HTTPProducers+1)
	for p := range cfg.HTTPProducers {
		wg.Go(func() {
			for i := p; i < cfg.HTTPAdds; i += cfg.HTTPProducers {
				content := fmt.Sprintf("%s%d", httpPrefix, i)
				stamp(content)
				if err := post(ctx, cfg, httpc, cfg.gateway(p), content); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := 0; i < cfg.CLIAdds; i += cfg.CLIBatch {
			var lines bytes.Buffer
			var batch []string
			for j := i; j < min(i+cfg.CLIBatch, cfg.CLIAdds); j++ {
				content := fmt.Sprintf("cli-%d", j)
				batch = append(batch, content)
				fmt.Fprintf(&lines, "%q\n", content)
			}
			stamp(batch...)
			if err := addCLI(ctx, cfg, &lines); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// post adds one instruction with POST /api/instructions on the gateway at
// base.
func post(ctx context.Context, cfg Config, httpc *http.Client, base, content string) error {
	body, _ := json.Marshal(map[string]string{"content": content})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/instructions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.Token)
	}
	res, err := httpc.Do(req)
	if err != nil {
		return fmt.Errorf("POST /api/instructions: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		var buf bytes.Buffer
		buf.ReadFrom(res.Body)
		return fmt.Errorf("POST /api/instructions: %s: %s", res.Status, buf.Bytes())
	}
	return nil
}
