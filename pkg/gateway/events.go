package gateway

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"lmtool.dev/lm/pkg/jsonio"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/queue"
	"lmtool.dev/lm/pkg/sse"
)

// retryMillis is the reconnection delay the stream asks browsers to use.
const retryMillis = 2000

// events is GET /api/events: the queue's changes as Server-Sent Events,
// for the callers lm queue watch (queue_watch) admits.
// Each stored event carries its sequence id, so a client that reconnects
// with Last-Event-ID (or ?since=ID) gets exactly what it missed; without
// either the stream starts with the next change. An event named "resync"
// says the client's state cannot be caught up event by event — events were
// missed beyond what the store retains, the id is one this store never
// issued, or the store named by Last-Event-Store (?store=) is not this
// one: reload the state.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	if err := s.admit(r, "queue_watch"); err != nil {
		writeError(w, http.StatusForbidden, err)
		return
	}
	last, resume, err := resumePoint(r)
	storeID := r.Header.Get("Last-Event-Store")
	if storeID == "" {
		storeID = r.URL.Query().Get("store")
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	caughtUp, leave := s.fanout.join()
	defer leave()
	select {
	case <-caughtUp:
	case <-r.Context().Done():
		return
	}
	sse.Start(w)
	rc := http.NewResponseController(w)
	out := bufio.NewWriter(w)
	sse.Retry(out, retryMillis)

	pos, cursor := s.fanout.position()
	// A resume point from another store (a gateway for another project
	// now on this address, or a restored file), or one this store never
	// issued, cannot be continued: the client reloads its state.
	if resume {
		switch {
		case storeID != "" && storeID != queue.Identity(r.Context(), &s.opts.Env):
			writeResync(out, "store_changed", cursor)
			resume = false
		case last > cursor && !s.issued(r, last):
			writeResync(out, "unknown_event_id", cursor)
			resume = false
		}
	}
	if !resume {
		last = cursor
	}
	// catchUp sends the stored events after last up to the fanout's cursor,
	// from the store, and returns the fanout position to follow from.
	catchUp := func() (uint64, error) {
		pos, cursor := s.fanout.position()
		for last < cursor {
			// From last itself while it is stored: ids need not be
			// consecutive (the database's are not), so only last gone
			// from the store says the events after it may have expired.
			from := last
			if last > 0 {
				from = last - 1
			}
			events, err := queue.Replay(r.Context(), &s.opts.Env, from, 1000)
			if err != nil {
				return 0, err
			}
			if last > 0 && len(events) > 0 {
				if events[0].ID != last {
					// The client reads the state afresh, as of the
					// cursor, and follows from there.
					writeResync(out, "events_expired", cursor)
					break
				}
				events = events[1:]
			}
			sent := false
			for _, e := range events {
				if e.ID > cursor {
					break
				}
				if err := writeEvent(out, e, true); err != nil {
					return 0, err
				}
				last, sent = e.ID, true
			}
			if !sent {
				// Nothing stored up to the cursor is left: the cursor's
				// own event went with a batch too large to keep.
				break
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
		items, wake, ok := s.fanout.after(pos)
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
			sse.KeepAlive(out)
		case <-r.Context().Done():
			return
		}
	}
}

// issued says whether the store holds events up to id: another gateway on
// the same database may have handed the client an id this one's feed has
// not caught up with yet.
func (s *Server) issued(r *http.Request, id uint64) bool {
	last, err := queue.LastEvent(r.Context(), &s.opts.Env)
	return err == nil && id <= last
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

// writeResync tells the client its state cannot be brought up to date
// event by event, and why; it reloads the state and follows from latest.
func writeResync(out *bufio.Writer, reason string, latest uint64) {
	data, _ := json.Marshal(struct {
		Reason string `json:"reason"`
		Latest uint64 `json:"latest_event_id"`
	}{reason, latest})
	sse.Write(out, sse.Event{Name: "resync", Data: data})
}

// writeEvent writes one SSE message: the event's type as the SSE event name
// and {id, type, timestamp, data} as its data; stored events also set the
// SSE id so the browser resumes after them.
func writeEvent(out *bufio.Writer, e queue.Event, stored bool) error {
	data, err := jsonio.Marshal(e)
	if err != nil {
		return err
	}
	msg := sse.Event{Name: e.Type, Data: data}
	if stored {
		msg.ID = strconv.FormatUint(e.ID, 10)
	}
	return sse.Write(out, msg)
}

// admit is nil when the request's caller may call the named operation, as
// a route that serves its data without calling it requires; an operation
// this gateway does not serve admits the person only.
func (s *Server) admit(r *http.Request, name string) error {
	c, _ := op.CallerFrom(r.Context())
	o, ok := s.ops[name]
	if !ok {
		if c.IsPerson() {
			return nil
		}
		return op.Errorf(op.KindDenied, "%s may not use %s: only the person may", c, r.URL.Path).WithCategory("denied")
	}
	return op.Admit(o.Info(), c, s.opts.Env.Grant)
}
