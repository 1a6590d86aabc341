package gateway_test

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"lmtool.dev/lm/pkg/gateway"
)

const otherOrigin = "http://localhost:5173"

// raw sends a request with the given headers (name, value, …) and no
// token unless one is among them.
func (g *gw) raw(method, path string, header ...string) *http.Response {
	g.t.Helper()
	req, err := http.NewRequest(method, g.url+path, nil)
	if err != nil {
		g.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() { res.Body.Close() })
	return res
}

// CORS for the origins the person named, and for no other.
func TestCORSForAllowedOriginsOnly(t *testing.T) {
	g := start(t, gateway.Options{AllowOrigins: []string{otherOrigin + "/"}})

	// A preflight needs no token: browsers send none with it.
	res := g.raw("OPTIONS", "/mcp", "Origin", otherOrigin, "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "authorization, content-type, mcp-session-id")
	h := res.Header
	if res.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != otherOrigin {
		t.Fatalf("preflight: %d, Allow-Origin %q", res.StatusCode, h.Get("Access-Control-Allow-Origin"))
	}
	for _, want := range []string{"Authorization", "Content-Type", "Mcp-Session-Id", "Last-Event-ID", "Mcp-Protocol-Version"} {
		if !strings.Contains(h.Get("Access-Control-Allow-Headers"), want) {
			t.Errorf("preflight allows headers %q, without %s", h.Get("Access-Control-Allow-Headers"), want)
		}
	}
	for _, want := range []string{"GET", "POST", "DELETE"} {
		if !strings.Contains(h.Get("Access-Control-Allow-Methods"), want) {
			t.Errorf("preflight allows methods %q, without %s", h.Get("Access-Control-Allow-Methods"), want)
		}
	}
	if !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") || h.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("preflight: Vary %q, Allow-Credentials %q", h.Values("Vary"), h.Get("Access-Control-Allow-Credentials"))
	}
	if res := g.raw("OPTIONS", "/api/status", "Origin", otherOrigin, "Access-Control-Request-Method", "GET",
		"Access-Control-Request-Private-Network", "true"); res.Header.Get("Access-Control-Allow-Private-Network") != "true" {
		t.Errorf("a private-network preflight: %d %v", res.StatusCode, res.Header)
	}

	// The request itself still needs its token, and says so readably.
	res = g.raw("GET", "/api/status", "Origin", otherOrigin)
	if res.StatusCode != 401 || res.Header.Get("Access-Control-Allow-Origin") != otherOrigin {
		t.Fatalf("without a token: %d, Allow-Origin %q", res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
	}
	res = g.raw("GET", "/api/status", "Origin", otherOrigin, "Authorization", g.auth())
	if res.StatusCode != 200 || res.Header.Get("Access-Control-Allow-Origin") != otherOrigin ||
		!strings.Contains(res.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
		t.Fatalf("with the token: %d %v", res.StatusCode, res.Header)
	}

	// Any other origin, a look-alike included, is refused as before, with
	// nothing that would let a page read the answer; so is a domain name
	// as Host, whatever the origin.
	for _, origin := range []string{"http://localhost:5174", "https://localhost:5173", "http://localhost:5173.evil.example", "null"} {
		for _, method := range []string{"OPTIONS", "GET"} {
			res := g.raw(method, "/api/status", "Origin", origin, "Access-Control-Request-Method", "GET", "Authorization", g.auth())
			if res.StatusCode != 403 || res.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("%s from %s: %d, Allow-Origin %q", method, origin, res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
			}
		}
	}
	if code, body := g.do("GET", "/api/status", "", "Origin", otherOrigin, "Host", "rebound.example"); code != 403 || body["error_category"] != "forbidden_host" {
		t.Errorf("an allowed origin on a rebound Host: %d %v", code, body)
	}

	// Without --allow-origin, that origin is foreign too.
	plain := start(t, gateway.Options{})
	if res := plain.raw("OPTIONS", "/api/status", "Origin", otherOrigin, "Access-Control-Request-Method", "GET"); res.StatusCode != 403 ||
		res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("no origins allowed: preflight %d %v", res.StatusCode, res.Header)
	}
}

func TestGatewayRefusesAWildcardOrigin(t *testing.T) {
	if _, err := gateway.New(gateway.Options{AllowOrigins: []string{"*"}, NoToken: true}); err == nil || !strings.Contains(err.Error(), "no wildcard") {
		t.Fatalf("New with origin *: %v", err)
	}
}

// ticketFor trades a token (an Authorization value) for a ticket.
func (g *gw) ticketFor(auth string) string {
	g.t.Helper()
	code, body := g.do("POST", "/api/tickets", "", "Authorization", auth)
	ticket, _ := body["ticket"].(string)
	if code != 201 || ticket == "" || body["expires_at"] == nil {
		g.t.Fatalf("POST /api/tickets = %d %v", code, body)
	}
	return ticket
}

// A ticket opens one event stream as the caller who asked for it, and
// nothing else; it never reaches the log.
func TestTicketsOpenOneStream(t *testing.T) {
	var log bytes.Buffer
	g := start(t, gateway.Options{Log: slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	agent := g.agentHeaders("webapp")["Authorization"]

	// The person's ticket opens the queue's events, once.
	ticket := g.ticketFor(g.auth())
	res := g.raw("GET", "/api/events?since=0&ticket="+ticket, "Accept", "text/event-stream")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("/api/events with a ticket: %d", res.StatusCode)
	}
	if line, _ := bufio.NewReader(res.Body).ReadString('\n'); !strings.HasPrefix(line, "retry:") {
		t.Fatalf("/api/events with a ticket began %q", line)
	}
	res.Body.Close()
	if res := g.raw("GET", "/api/events?ticket="+ticket, "Accept", "text/event-stream"); res.StatusCode != 401 {
		t.Fatalf("a spent ticket: %d", res.StatusCode)
	}

	// It opens streams only: elsewhere it is no token at all.
	other := g.ticketFor(g.auth())
	for _, path := range []string{"/api/status", "/api/instructions", "/info", "/mcp", "/servers"} {
		if res := g.raw("GET", path+"?ticket="+other); res.StatusCode != 401 {
			t.Errorf("GET %s with a ticket: %d, want 401", path, res.StatusCode)
		}
	}
	if code, _ := g.do("POST", "/api/instructions?ticket="+other, `{"content":"by ticket"}`, "Authorization", ""); code != 401 {
		t.Errorf("POST /api/instructions with a ticket: %d, want 401", code)
	}

	// An agent's ticket opens /sse as that agent: its client id takes
	// the agent's calls and no one else's.
	res = g.raw("GET", "/sse?ticket="+g.ticketFor(agent))
	if res.StatusCode != 200 {
		t.Fatalf("/sse with an agent's ticket: %d", res.StatusCode)
	}
	stream := &sseStream{t: t, r: bufio.NewReader(res.Body), res: res}
	_, hello := stream.next()
	stream.next() // the same, as a plain message
	id, _ := hello["clientId"].(string)
	msg := `{"clientId":"` + id + `","tool":"servers_list","parameters":{}}`
	if code, body := g.do("POST", "/messages", msg, "Authorization", g.auth()); code != 404 {
		t.Errorf("the person posting for the agent's stream: %d %v, want 404", code, body)
	}
	if code, body := g.do("POST", "/messages", msg, "Authorization", agent); code != 202 {
		t.Fatalf("the agent posting for its stream: %d %v", code, body)
	}
	if name, result := stream.next(); name != "tool_result" || result["success"] != true {
		t.Fatalf("the agent's result: %q %v", name, result)
	}
	// It opens the dashboard's stream, as the agent's token does.
	if res := g.raw("GET", "/servers/events?ticket="+g.ticketFor(agent), "Accept", "text/event-stream"); res.StatusCode != 200 {
		t.Errorf("/servers/events with an agent's ticket: %d", res.StatusCode)
	}

	g.stop()
	for _, tk := range []string{ticket, other} {
		if strings.Contains(log.String(), tk) || strings.Contains(log.String(), strings.TrimPrefix(tk, "lmt_")) {
			t.Fatalf("a ticket is in the gateway's log:\n%s", log.String())
		}
	}
	if !strings.Contains(log.String(), `"path":"/api/events"`) {
		t.Fatalf("the log has no line for the stream:\n%s", log.String())
	}
}

func TestNoTicketsWithoutTokens(t *testing.T) {
	g := start(t, gateway.Options{NoToken: true})
	if code, body := g.do("POST", "/api/tickets", ""); code != 409 || body["error_category"] != "no_token" {
		t.Fatalf("POST /api/tickets without tokens: %d %v", code, body)
	}
}

// What a local process without a token, an agent, and a page on another
// origin try with tickets and CORS, and get nothing from.
func TestTicketsAndOriginsRefuseWhatTheyWereNotGiven(t *testing.T) {
	g := start(t, gateway.Options{AllowOrigins: []string{otherOrigin}})
	agent := g.agentHeaders("claude")["Authorization"]
	port := g.url[strings.LastIndex(g.url, ":")+1:]

	// No token, or one the gateway does not know, mints nothing.
	for _, auth := range []string{"", "Bearer lmt_forged", "Bearer " + personToken + "x"} {
		if code, body := g.do("POST", "/api/tickets", "", "Authorization", auth); code != 401 || body["ticket"] != nil {
			t.Errorf("POST /api/tickets with %q: %d %v", auth, code, body)
		}
	}
	// A ticket does not stand in for a token a request does send, nor
	// open a stream by any method but GET.
	if res := g.raw("GET", "/api/events?ticket="+g.ticketFor(agent), "Authorization", "Bearer lmt_forged"); res.StatusCode != 401 {
		t.Errorf("a ticket beside an unknown token: %d", res.StatusCode)
	}
	ticket := g.ticketFor(agent)
	if code, _ := g.do("POST", "/sse?ticket="+ticket, "{}", "Authorization", ""); code != 401 && code != 405 {
		t.Errorf("POST /sse with a ticket: %d", code)
	}
	// An agent's ticket is the agent's: the person's routes refuse it.
	if res := g.raw("GET", "/api/events?ticket="+ticket, "Accept", "text/event-stream"); res.StatusCode != 403 {
		t.Errorf("the agent's ticket on the queue's stream, lm queue watch's: %d", res.StatusCode)
	}
	if res := g.raw("GET", "/sse?ticket="+g.ticketFor(agent), "Accept", "text/event-stream"); res.StatusCode != 200 {
		t.Fatalf("the agent's ticket on its stream: %d", res.StatusCode)
	}
	marker := "added by a ticket"
	if code, _ := g.do("POST", "/api/servers?ticket="+g.ticketFor(agent), `{"name":"evil","command":["true"]}`, "Authorization", ""); code != 401 {
		t.Errorf("POST /api/servers with an agent's ticket: %d", code)
	}
	if code, _ := g.do("POST", "/api/instructions?ticket="+g.ticketFor(g.auth()), `{"content":"`+marker+`"}`, "Authorization", ""); code != 401 {
		t.Errorf("POST /api/instructions with the person's ticket: %d", code)
	}

	// Origins that look like the gateway's or the allowed one, "null"
	// (sandboxed frames, file: pages) and case or slash variants get no
	// CORS and no answer.
	for _, origin := range []string{
		"http://127.0.0.1:" + port + ".evil.example", "http://127.0.0.1:80.evil", "http://evil.example#@127.0.0.1:" + port,
		"http://localhost:5173.evil.example", "http://evil.localhost:5173", otherOrigin + "/", "HTTP://LOCALHOST:5173", "null",
	} {
		for _, method := range []string{"OPTIONS", "GET", "POST"} {
			res := g.raw(method, "/api/instructions", "Origin", origin, "Access-Control-Request-Method", "POST", "Authorization", g.auth(), "Content-Type", "application/json")
			if res.StatusCode != 403 || res.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("%s from %q: %d, Allow-Origin %q", method, origin, res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
			}
		}
	}
	// The allowed origin's preflight passes without a token; what follows
	// it still needs one.
	if res := g.raw("OPTIONS", "/api/instructions", "Origin", otherOrigin, "Access-Control-Request-Method", "POST"); res.StatusCode != 204 {
		t.Fatalf("the allowed origin's preflight: %d", res.StatusCode)
	}
	if code, _ := g.do("POST", "/api/instructions", `{"content":"`+marker+`"}`, "Origin", otherOrigin, "Authorization", ""); code != 401 {
		t.Errorf("the allowed origin's POST without a token: %d", code)
	}
	// A rebound name is refused whatever the origin says.
	for _, host := range []string{"rebound.example:" + port, "localhost.:" + port, "127.0.0.1.nip.io:" + port} {
		if code, body := g.do("GET", "/api/status", "", "Host", host, "Origin", otherOrigin); code != 403 || body["error_category"] != "forbidden_host" {
			t.Errorf("Host %s: %d %v", host, code, body)
		}
	}
	if code, body := g.do("GET", "/api/instructions?status=all", ""); code != 200 || strings.Contains(fmt.Sprint(body), marker) {
		t.Fatalf("the queue after the tries: %d %v", code, body)
	}
}
