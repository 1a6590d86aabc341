package gateway

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"lmtool.dev/lm/pkg/jsonio"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/queue"
)

// retryMillis is the reconnection delay the stream asks browsers to use.
const retryMillis = 2000

// events is GET /api/events: the queue's changes as Server-Sent Events.
// Each stored event carries its sequence id, so a client that reconnects
// with Last-Event-ID (or ?since=ID) gets exactly what it missed; without
// either the stream starts with the next change. An event named "resync"
// says events were missed beyond what the store retains: reload the state.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	last, resume, err := resumePoint(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	select {
	case <-s.hub.ready:
	case <-r.Context().Done():
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	out := bufio.NewWriter(w)
	fmt.Fprintf(out, "retry: %d\n\n", retryMillis)

	pos, cursor := s.hub.position()
	if !resume {
		last = cursor
	}
	// catchUp sends the stored events after last up to the hub's cursor,
	// from the store, and returns the hub position to follow from.
	catchUp := func() (uint64, error) {
		pos, cursor := s.hub.position()
		for last < cursor {
			events, err := queue.EventsSince(r.Context(), &s.opts.Env, last, 1000)
			if err != nil {
				return 0, err
			}
			if len(events) > 0 && last > 0 && events[0].ID > last+1 {
				fmt.Fprintf(out, "event: resync\ndata: {\"missed_after\":%d}\n\n", last)
			}
			if len(events) == 0 {
				break
			}
			for _, e := range events {
				if e.ID > cursor {
					break
				}
				if err := writeEvent(out, s.hub.derive(e), true); err != nil {
					return 0, err
				}
				last = e.ID
			}
		}
		return pos, nil
	}
	if pos, err = catchUp(); err != nil {
		s.opts.Log.Warn("event stream catch-up", "err", err)
		return
	}
	keepAlive := time.NewTicker(s.opts.KeepAlive)
	defer keepAlive.Stop()
	for {
		items, wake, ok := s.hub.after(pos)
		if !ok {
			if pos, err = catchUp(); err != nil {
				return
			}
			continue
		}
		for _, it := range items {
			pos = it.seq
			if it.stored && it.ev.ID <= last {
				continue
			}
			if err := writeEvent(out, it.ev, it.stored); err != nil {
				return
			}
			if it.stored {
				last = it.ev.ID
			}
		}
		if out.Flush() != nil || rc.Flush() != nil {
			return
		}
		select {
		case <-wake:
		case <-keepAlive.C:
			fmt.Fprint(out, ": keep-alive\n\n")
		case <-r.Context().Done():
			return
		}
	}
}

// resumePoint reads where a stream resumes: Last-Event-ID, else ?since=.
func resumePoint(r *http.Request) (last uint64, resume bool, err error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("since")
	}
	if v = strings.TrimSpace(v); v == "" {
		return 0, false, nil
	}
	last, err = strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, false, op.Errorf(op.KindInvalid, "event id %q is not a sequence number", v).
			WithHint("resume with the id of the last event received (a non-negative integer)")
	}
	return last, true, nil
}

// writeEvent writes one SSE message: the event's type as the SSE event name
// and {id, type, timestamp, data} as its data; stored events also set the
// SSE id so the browser resumes after them.
func writeEvent(out *bufio.Writer, e queue.Event, stored bool) error {
	data, err := jsonio.Marshal(e)
	if err != nil {
		return err
	}
	if stored {
		fmt.Fprintf(out, "id: %d\n", e.ID)
	}
	fmt.Fprintf(out, "event: %s\ndata: %s\n\n", e.Type, data)
	return nil
}
