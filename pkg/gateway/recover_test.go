package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPanickingHandlerIsA500: a handler that panics gets its request a 500
// with the envelope, and the server goes on answering.
func TestPanickingHandlerIsA500(t *testing.T) {
	h := (&Server{opts: Options{Log: slog.New(slog.DiscardHandler)}}).recovered(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/boom" {
			panic("a bug")
		}
		io.WriteString(w, "fine")
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/boom")
	if err != nil {
		t.Fatalf("a panicking handler dropped the connection: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 500 || !strings.Contains(string(body), `"error_category":"internal"`) {
		t.Fatalf("panicking handler = %d %s", res.StatusCode, body)
	}
	res, err = http.Get(srv.URL + "/fine")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != "fine" {
		t.Fatalf("after a panic: %s", body)
	}
}
