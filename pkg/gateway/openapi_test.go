package gateway_test

import (
	"context"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/gateway"
)

// TestEveryDocumentedRouteIsServed probes each method and path of
// /openapi.json: none may fall through to the router's 404 or 405, so the
// document cannot describe a route that does not exist. It also checks
// the document covers the hub and the protocols beside the queue's API.
func TestEveryDocumentedRouteIsServed(t *testing.T) {
	g := start(t, gateway.Options{})
	code, doc := g.do("GET", "/openapi.json", "")
	if code != 200 {
		t.Fatalf("GET /openapi.json = %d", code)
	}
	paths, _ := doc["paths"].(map[string]any)
	for _, p := range []string{"/health", "/servers/{server}", "/servers/install", "/cache", "/mcp", "/mcp/{server}", "/sse", "/messages", "/ollama/enhance", "/api/events"} {
		if paths[p] == nil {
			t.Errorf("/openapi.json does not describe %s", p)
		}
	}
	var routes []string
	for p, methods := range paths {
		for m := range methods.(map[string]any) {
			routes = append(routes, strings.ToUpper(m)+" "+p)
		}
	}
	sort.Strings(routes)
	fill := strings.NewReplacer("{id}", "nosuch", "{server}", "nosuch")
	for _, rt := range routes {
		method, path, _ := strings.Cut(rt, " ")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req, err := http.NewRequestWithContext(ctx, method, g.url+fill.Replace(path), strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", g.auth())
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Errorf("%s: %v", rt, err)
			continue
		}
		// Event streams never end: the headers are the answer.
		var head []byte
		if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			head, _ = io.ReadAll(io.LimitReader(res.Body, 512))
		}
		res.Body.Close()
		cancel()
		if res.StatusCode == http.StatusMethodNotAllowed || strings.Contains(string(head), "404 page not found") ||
			strings.Contains(string(head), "no API route") {
			t.Errorf("%s is documented but not served: %d %s", rt, res.StatusCode, head)
		}
	}
}

// /docs is the same description as /openapi.json, to read: every
// documented route, and for the API's routes the operation each calls
// with its input schema.
func TestDocsPageListsEveryRoute(t *testing.T) {
	g := start(t, gateway.Options{})
	_, doc := g.do("GET", "/openapi.json", "")
	res, err := http.Get(g.url + "/docs")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /docs = %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	html := string(page)
	for path, methods := range doc["paths"].(map[string]any) {
		for m := range methods.(map[string]any) {
			want := `<span class="verb verb-` + strings.ToUpper(m) + `">` + strings.ToUpper(m) + `</span> <code>` + path + `</code>`
			if !strings.Contains(html, want) {
				t.Errorf("/docs does not list %s %s", strings.ToUpper(m), path)
			}
		}
	}
	post := doc["paths"].(map[string]any)["/api/instructions"].(map[string]any)["post"].(map[string]any)
	schema := post["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
	if _, ok := schema["properties"].(map[string]any)["content"]; !ok {
		t.Errorf("POST /api/instructions's body schema lacks content: %v", schema)
	}
	for _, s := range []string{"<code>queue_add</code> (<code>lm queue add</code>)", "&#34;content&#34;"} {
		if !strings.Contains(html, s) {
			t.Errorf("/docs lacks %s", s)
		}
	}
}
