package sse

import (
	"bytes"
	"net/http/httptest"
	"testing"
)

func TestWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    Event
		want string
	}{
		{"named with an id", Event{ID: "7", Name: "instruction.created", Data: []byte(`{"id":7}`)}, "id: 7\nevent: instruction.created\ndata: {\"id\":7}\n\n"},
		{"plain message", Event{Data: []byte(`{"type":"connected"}`)}, "data: {\"type\":\"connected\"}\n\n"},
		{"multi-line data keeps every line", Event{Name: "x", Data: []byte("a\nb\n")}, "event: x\ndata: a\ndata: b\n\n"},
		{"empty data is still a message", Event{Name: "ping"}, "event: ping\ndata:\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, tc.e); err != nil || b.String() != tc.want {
				t.Errorf("Write(%+v) = %q, %v; want %q", tc.e, b.String(), err, tc.want)
			}
		})
	}
}

func TestStartRetryKeepAlive(t *testing.T) {
	w := httptest.NewRecorder()
	Start(w)
	Retry(w, 2000)
	KeepAlive(w)
	if ct := w.Header().Get("Content-Type"); ct != "text/event-stream" || w.Header().Get("Cache-Control") != "no-store" || w.Code != 200 {
		t.Errorf("headers %v, status %d", w.Header(), w.Code)
	}
	if got := w.Body.String(); got != "retry: 2000\n\n: keep-alive\n\n" {
		t.Errorf("body %q", got)
	}
}
