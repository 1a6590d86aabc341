package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers/client"
)

// The Ask view's conversation, kept per page session (see client.Thread):
// GET reads it, PUT replaces it with {"turns": […]}, DELETE clears it.

func (s *Server) askThreadRoutes(mux *http.ServeMux, identified func(http.Handler) http.Handler) {
	// The conversation is the person's: its results may be anything a
	// server answered, and a proposal planted there is one the person's
	// Approve would run.
	page := func(h http.Handler) http.Handler { return identified(personOnly(false, "the Ask conversation", h)) }
	const path = "/api/ask/thread/{session}"
	mux.Handle("GET "+path, page(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, err := client.LoadThread(r.Context(), &s.opts.Env, r.PathValue("session"))
		s.answerThread(w, t, err)
	})))
	mux.Handle("PUT "+path, page(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Turns []json.RawMessage `json:"turns"`
		}
		data, err := io.ReadAll(r.Body)
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			writeError(w, http.StatusRequestEntityTooLarge, op.Errorf(op.KindInvalid, "request body is larger than %d bytes", tooBig.Limit).WithCategory("body_too_large"))
			return
		case err != nil || json.Unmarshal(data, &body) != nil || body.Turns == nil:
			writeError(w, http.StatusBadRequest, op.Errorf(op.KindInvalid, `the body must be {"turns": [ … ]}`).WithCategory("bad_json"))
			return
		}
		t, err := client.SaveThread(r.Context(), &s.opts.Env, r.PathValue("session"), body.Turns)
		s.answerThread(w, t, err)
	})))
	mux.Handle("DELETE "+path, page(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := client.ClearThread(r.Context(), &s.opts.Env, r.PathValue("session")); err != nil {
			writeError(w, op.HTTPStatus(err, http.StatusUnprocessableEntity), err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})))
}

func (s *Server) answerThread(w http.ResponseWriter, t client.Thread, err error) {
	if err != nil {
		writeError(w, op.HTTPStatus(err, http.StatusUnprocessableEntity), err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}
