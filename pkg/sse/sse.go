// Package sse writes Server-Sent Events, the text/event-stream framing of
// the HTML standard that browsers' EventSource reads: every stream lm
// serves (the queue's events, spec 002's tool results, the servers
// dashboard) frames its messages here, so they cannot differ in how an id,
// a name or a multi-line payload is spelled.
package sse

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
)

// Start sends the headers of an event stream with status 200: no caching,
// and no buffering by a proxy in front, which would hold events back.
func Start(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
}

// Event is one message. Name is the event's type (EventSource's
// addEventListener name; empty for a plain message); ID, when set, is what
// a reconnecting client sends back as Last-Event-ID.
type Event struct {
	ID   string
	Name string
	Data []byte
}

// Write frames e. Each line of Data becomes a data: line, so a payload
// with newlines arrives whole.
func Write(w io.Writer, e Event) error {
	var b bytes.Buffer
	if e.ID != "" {
		fmt.Fprintf(&b, "id: %s\n", e.ID)
	}
	if e.Name != "" {
		fmt.Fprintf(&b, "event: %s\n", e.Name)
	}
	for line := range bytes.Lines(e.Data) {
		b.WriteString("data: ")
		b.Write(bytes.TrimSuffix(line, []byte("\n")))
		b.WriteByte('\n')
	}
	if len(e.Data) == 0 {
		b.WriteString("data:\n")
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// Retry asks the client to wait ms milliseconds before reconnecting.
func Retry(w io.Writer, ms int) error {
	_, err := fmt.Fprintf(w, "retry: %d\n\n", ms)
	return err
}

// KeepAlive writes a comment, which clients ignore, so that proxies and
// the client's own timeout see a quiet stream is still open.
func KeepAlive(w io.Writer) error {
	_, err := io.WriteString(w, ": keep-alive\n\n")
	return err
}
