package httpjson

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"lmtool.dev/lm/pkg/op"
)

func TestWrite(t *testing.T) {
	w := httptest.NewRecorder()
	Write(w, http.StatusCreated, map[string]int{"id": 7})
	if w.Code != 201 || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Cache-Control") != "no-store" || w.Body.String() != "{\"id\":7}\n" {
		t.Errorf("got %d %v %q", w.Code, w.Header(), w.Body)
	}
}

func TestWriteUnencodable(t *testing.T) {
	w := httptest.NewRecorder()
	Write(w, http.StatusOK, math.Inf(1))
	var env op.Envelope
	if w.Code != 500 || json.Unmarshal(w.Body.Bytes(), &env) != nil || env.ErrorCategory != "internal" {
		t.Errorf("got %d %q, want 500 with the envelope", w.Code, w.Body)
	}
}

func TestError(t *testing.T) {
	err := op.Errorf(op.KindNotFound, "no instruction 7").WithHint("see lm queue list")
	w := httptest.NewRecorder()
	Error(w, op.HTTPStatus(err, http.StatusBadRequest), err)
	var env op.Envelope
	if w.Code != 404 || json.Unmarshal(w.Body.Bytes(), &env) != nil || env.Error != "no instruction 7" || env.Suggestion != "see lm queue list" || env.ExitCode != 3 {
		t.Errorf("got %d %q", w.Code, w.Body)
	}
}
