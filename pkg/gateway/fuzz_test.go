package gateway

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/registry"
)

// The gateway's parsers of outside input: every request header, query
// parameter and body byte comes from whoever can reach the port, so each
// parser must answer any input with a value or a structured error, and
// agree with a plain statement of what it accepts.

func FuzzResumePoint(f *testing.F) {
	for _, seed := range [][2]string{{"", ""}, {"42", ""}, {"", "7"}, {" 3 ", "9"}, {"-1", ""}, {"", "x"}, {"18446744073709551616", ""}, {"\t", "0"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, header, since string) {
		r := httptest.NewRequest("GET", "/api/events?since="+url.QueryEscape(since), nil)
		r.Header["Last-Event-Id"] = []string{header}
		last, resume, err := resumePoint(r)

		// Last-Event-ID wins over ?since= when present.
		given := r.Header.Get("Last-Event-ID")
		if given == "" {
			given = since
		}
		given = strings.TrimSpace(given)
		want, parseErr := strconv.ParseUint(given, 10, 64)
		switch {
		case given == "":
			if err != nil || resume || last != 0 {
				t.Fatalf("no id: got (%d, %v, %v), want a stream from now", last, resume, err)
			}
		case parseErr != nil:
			if err == nil || op.KindOf(err) != op.KindInvalid {
				t.Fatalf("id %q: got (%d, %v, %v), want an invalid-input error", given, last, resume, err)
			}
		default:
			if err != nil || !resume || last != want {
				t.Fatalf("id %q: got (%d, %v, %v), want a resume after %d", given, last, resume, err, want)
			}
		}
	})
}

func FuzzQueryValue(f *testing.F) {
	for _, seed := range []string{"", "3", "-2.5", "1e3", "true", "F", "Inf", "NaN", "0x1p-2", "1e400", "pending", "1_000"} {
		f.Add(seed)
	}
	typeSets := [][]string{nil, {"string"}, {"integer"}, {"number"}, {"boolean"}, {"integer", "null"}, {"boolean", "string"}}
	f.Fuzz(func(t *testing.T, v string) {
		for _, types := range typeSets {
			got := queryValue(types, v)
			// Whatever the conversion, the operation's input must still
			// encode as JSON.
			if _, err := json.Marshal(map[string]any{"field": got}); err != nil {
				t.Fatalf("queryValue(%v, %q) = %#v does not encode: %v", types, v, got, err)
			}
			switch g := got.(type) {
			case string:
				if g != v {
					t.Fatalf("queryValue(%v, %q) changed the string to %q", types, v, g)
				}
			case json.Number:
				n, err := strconv.ParseFloat(v, 64)
				if err != nil || math.IsInf(n, 0) || math.IsNaN(n) || !accepts(types, "integer", "number") {
					t.Fatalf("queryValue(%v, %q) = number %s", types, v, g)
				}
				if back, _ := g.Float64(); back != n {
					t.Fatalf("queryValue(%v, %q) = %s, which is not %v", types, v, g, n)
				}
			case bool:
				b, err := strconv.ParseBool(v)
				if err != nil || b != g || !accepts(types, "boolean") {
					t.Fatalf("queryValue(%v, %q) = %v", types, v, g)
				}
			default:
				t.Fatalf("queryValue(%v, %q) = %#v (%T)", types, v, got, got)
			}
		}
	})
}

func accepts(types []string, any ...string) bool {
	for _, t := range types {
		for _, a := range any {
			if t == a {
				return true
			}
		}
	}
	return false
}

func FuzzRequestInput(f *testing.F) {
	var add op.Operation
	for _, o := range registry.All() {
		if o.Info().Name == "queue_add" {
			add = o
		}
	}
	if add == nil {
		f.Fatal("queue_add is not registered")
	}
	rt := apiRoute{Route: add.Info().HTTP[0], op: add}
	for _, seed := range [][2]string{
		{`{"text":"hi"}`, ""}, {``, "text=hi"}, {`null`, "x=1"}, {`[1,2]`, ""}, {`{"text":"a"} {"text":"b"}`, ""},
		{`{"text":"a"} trailing`, ""}, {`"str"`, ""}, {`{"position":1e999}`, ""}, {" \n ", "position=2"}, {`{`, ""},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, body, query string) {
		r := httptest.NewRequest("POST", "/api/instructions", strings.NewReader(body))
		r.URL.RawQuery = query
		raw, err := requestInput(r, rt)
		if err != nil {
			if op.KindOf(err) != op.KindInvalid {
				t.Fatalf("body %q, query %q: error of kind %v, want invalid input: %v", body, query, op.KindOf(err), err)
			}
			return
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
			t.Fatalf("body %q, query %q: input %s is not a JSON object", body, query, raw)
		}
		if trimmed := strings.TrimSpace(body); trimmed != "" {
			var whole map[string]json.RawMessage
			if err := json.Unmarshal([]byte(trimmed), &whole); err != nil || whole == nil {
				t.Fatalf("body %q was accepted but is not one JSON object", body)
			}
		}
	})
}

// FuzzSameOrigin checks the DNS-rebinding and cross-site defence on a
// loopback listener: a request passes only with a loopback Host (localhost
// or a loopback IP, with or without a port) and, if it has an Origin, one
// naming an http(s) origin on that same host or exactly the one origin the
// person allowed, which alone gets an Access-Control-Allow-Origin; a request
// without an Origin, with the Origin a browser sends for the gateway's own
// page, or with the allowed one, passes whenever its Host is loopback. A
// refusal is a 403 with the error envelope.
func FuzzSameOrigin(f *testing.F) {
	const allowed = "http://localhost:5173" // the one other origin the person allows
	for _, seed := range [][2]string{
		{"127.0.0.1:7437", ""}, {"127.0.0.1:7437", "http://127.0.0.1:7437"}, {"localhost:7437", "http://LOCALHOST:7437"},
		{"[::1]:7437", "https://[::1]:7437"}, {"evil.example:7437", ""}, {"127.0.0.1:7437", "http://evil.example"},
		{"127.0.0.1.nip.io:7437", ""}, {"127.0.0.1:7437", "null"}, {"127.0.0.1", "http://127.0.0.1"},
		{"127.0.0.1:7437", "http://127.0.0.1:7437@evil.example"}, {"localhost.:7437", ""}, {"[::ffff:127.0.0.1]:1", ""},
		{"127.0.0.1:7437", allowed}, {"evil.example:7437", allowed}, {"127.0.0.1:7437", "http://localhost:51730"}, {"127.0.0.1:7437", "HTTP://localhost:5173"},
	} {
		f.Add(seed[0], seed[1])
	}
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7437}
	s := &Server{origins: map[string]bool{allowed: true}}
	f.Fuzz(func(t *testing.T, host, origin string) {
		r := httptest.NewRequest("GET", "/api/status", nil)
		r.Host = host
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(local)))
		passed := false
		w := httptest.NewRecorder()
		s.sameOrigin(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { passed = true })).ServeHTTP(w, r)

		if passed {
			if !loopbackHost(host) {
				t.Fatalf("Host %q passed but is not loopback", host)
			}
			if acao := w.Header().Get("Access-Control-Allow-Origin"); acao != "" && (origin != allowed || acao != allowed) {
				t.Fatalf("Origin %q was allowed as %q", origin, acao)
			}
			if origin != "" && origin != allowed {
				u, err := url.Parse(origin)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !strings.EqualFold(u.Host, host) {
					t.Fatalf("Origin %q passed on Host %q", origin, host)
				}
			}
			return
		}
		browserOrigin := false
		for _, scheme := range []string{"http://", "https://"} {
			if u, err := url.Parse(origin); err == nil && origin == scheme+host && u.Host == host {
				browserOrigin = true
			}
		}
		if loopbackHost(host) && (origin == "" || browserOrigin || origin == allowed) {
			t.Fatalf("Host %q, Origin %q was refused", host, origin)
		}
		var body struct {
			Success       *bool  `json:"success"`
			ErrorCategory string `json:"error_category"`
		}
		if w.Code != http.StatusForbidden || json.Unmarshal(w.Body.Bytes(), &body) != nil || body.Success == nil || *body.Success ||
			(body.ErrorCategory != "forbidden_host" && body.ErrorCategory != "forbidden_origin") {
			t.Fatalf("Host %q, Origin %q: refused with %d %s, want 403 and the error envelope", host, origin, w.Code, w.Body)
		}
	})
}

// loopbackHost: a Host header, with or without a port, that names
// localhost or a loopback IP address.
func loopbackHost(host string) bool {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		name = host[1 : len(host)-1]
	}
	if strings.EqualFold(name, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(name)
	return err == nil && ip.IsLoopback()
}
