package client

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/table"
)

// Spec 002 gives web clients a protocol of their own beside MCP: GET /sse
// opens a stream whose first event is {"type":"connected","clientId":…},
// and POST /messages runs {clientId, tool, parameters}. Its stream never
// sends the "endpoint" event of MCP's legacy SSE transport, so an MCP
// client pointed at it waits for one in vain. lm's gateway serves both,
// with MCP at the path GET /info names.

// probeLimit bounds what the probe reads before the first event.
const probeLimit = 16 << 10

// webClientStream reports, as an error naming the server and its MCP URL,
// that target's URL is spec 002's web-client stream rather than MCP; nil
// when the stream's first event is anything else (or there is none).
func webClientStream(ctx context.Context, target Target) error {
	event, data := firstEvent(ctx, target, target.URL, "text/event-stream")
	if event != "connected" && event != "message" {
		return nil
	}
	var hello struct {
		Type     string `json:"type"`
		ClientID string `json:"clientId"`
	}
	if json.Unmarshal([]byte(data), &hello) != nil || hello.Type != "connected" || hello.ClientID == "" {
		return nil
	}
	server, mcpURL := describeWebServer(ctx, target)
	e := op.Errorf(op.KindInvalid, "%s is %s's stream for web clients (spec 002: GET /sse and POST /messages with a clientId), not MCP", target.URL, server).
		WithCategory("not_mcp")
	if mcpURL != "" {
		return e.WithHint("its MCP endpoint is %s: use --url %s", mcpURL, mcpURL)
	}
	return e.WithHint("use the server's MCP URL (lm's gateway serves MCP at /mcp)")
}

// describeWebServer asks the server's GET /info (a sibling of its /sse) for
// its name, version and MCP endpoint.
func describeWebServer(ctx context.Context, target Target) (server, mcpURL string) {
	server = "a server"
	base, err := url.Parse(target.URL)
	if err != nil {
		return server, ""
	}
	infoURL := base.ResolveReference(&url.URL{Path: "info"})
	resp, err := get(ctx, target, infoURL.String(), "application/json")
	if err != nil {
		return server, ""
	}
	defer resp.Body.Close()
	var info struct {
		Name      string            `json:"name"`
		Version   string            `json:"version"`
		Endpoints map[string]string `json:"endpoints"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, probeLimit)).Decode(&info) != nil {
		return server, ""
	}
	if name := strings.TrimSpace(info.Name + " " + info.Version); name != "" {
		server = table.Printable(name)
	}
	if p := info.Endpoints["mcp"]; p != "" {
		if ref, err := url.Parse(p); err == nil {
			mcpURL = infoURL.ResolveReference(ref).String()
		}
	}
	return server, mcpURL
}

// firstEvent reads a server-sent event stream up to its first event with
// data and returns the event's name ("message" when unnamed) and data.
func firstEvent(ctx context.Context, target Target, rawURL, accept string) (event, data string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the stream stays open otherwise
	resp, err := get(ctx, target, rawURL, accept)
	if err != nil {
		return "", ""
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return "", ""
	}
	lines := bufio.NewScanner(io.LimitReader(resp.Body, probeLimit))
	var buf []string
	for lines.Scan() {
		line := lines.Text()
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch {
		case line == "" && len(buf) > 0:
			if event == "" {
				event = "message"
			}
			return event, strings.Join(buf, "\n")
		case line == "":
			event = ""
		case field == "event":
			event = value
		case field == "data":
			buf = append(buf, value)
		}
	}
	return "", ""
}

func get(ctx context.Context, target Target, rawURL, accept string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range target.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", accept)
	return http.DefaultClient.Do(req)
}
