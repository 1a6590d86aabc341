package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"lmtool.dev/lm/pkg/gateway"
)

// The page's files are served by name only: no listing of the embedded
// tree, and a name no file can have is a 404, not a 500.
func TestAssetsServeFilesOnly(t *testing.T) {
	g := start(t, gateway.Options{})
	get := func(path string) (int, string) {
		res, err := http.Get(g.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	if code, _ := get("/assets/app.css"); code != 200 {
		t.Fatalf("/assets/app.css = %d", code)
	}
	for _, path := range []string{"/assets/", "/assets/fonts/", "/assets/%ff", "/assets/..%2fapp.css", "/assets/nope.js"} {
		code, body := get(path)
		if code != 404 || strings.Contains(body, "app.css") || strings.Contains(body, "<pre>") {
			t.Errorf("GET %s = %d %q", path, code, body)
		}
	}
}
