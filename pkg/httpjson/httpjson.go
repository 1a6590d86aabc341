// Package httpjson answers HTTP requests with JSON: a value, or an error as
// lm's error envelope (op.Envelope, the object --json-errors prints and MCP
// returns), so every HTTP face (the gateway's API, the hub, the enhancer)
// answers alike. Responses are never cached: they describe state that moves.
package httpjson

import (
	"net/http"
	"strconv"

	"lmtool.dev/lm/pkg/jsonio"
	"lmtool.dev/lm/pkg/op"
)

// Write sends v as the body with status.
func Write(w http.ResponseWriter, status int, v any) {
	data, err := jsonio.Marshal(v)
	if err != nil {
		Error(w, http.StatusInternalServerError, op.Errorf(op.KindInternal, "encode the response: %w", err))
		return
	}
	send(w, status, data)
}

// Error sends err's envelope with status; op.HTTPStatus gives the status
// for its kind.
func Error(w http.ResponseWriter, status int, err error) {
	data, _ := jsonio.Marshal(op.EnvelopeOf(err)) // strings, numbers and booleans: it encodes
	send(w, status, data)
}

// Raw sends body, a JSON value already encoded, with status and its
// length: a handler that flushes it has answered in full, and may go on
// with work its caller need not wait for.
func Raw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	send(w, status, body)
}

func send(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
