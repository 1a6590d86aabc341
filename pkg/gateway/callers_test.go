package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/registry"
	"lmtool.dev/lm/pkg/store"
)

// TestRESTRoutesEnforceTheCallersPolicy: every route of the HTTP API,
// reached over loopback with the request's caller recorded as the
// gateway's authentication records it, is allowed or denied as its
// operation declares. The probes carry an unknown field, so an admitted
// call fails validation (422) and runs nothing; a refused one is 403.
func TestRESTRoutesEnforceTheCallersPolicy(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Options{Env: op.Env{Store: store.New(filepath.Join(dir, "lm.db"), 5*time.Second), Home: dir, Stderr: io.Discard, Now: time.Now},
		Ops: registry.All(), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []op.Caller{{Role: op.RolePerson}, {Role: op.RoleAgent, Name: "probe"}, {}} {
		for _, rt := range s.api {
			m := rt.op.Info()
			// A route of the person's (running a call, the page's Approve)
			// admits the person only, whoever its operation admits elsewhere.
			admitted := c.Role == op.RolePerson || (!rt.PersonOnly && (c.Role == op.RoleAgent && m.Callers >= op.Agents || m.Callers == op.Anyone))
			h := s.apiHandler(rt)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.ServeHTTP(w, r.WithContext(op.WithCaller(r.Context(), c)))
			}))
			path := rt.Path
			for _, name := range rt.Wildcards() {
				path = strings.Replace(path, "{"+name+"}", "probe", 1)
			}
			var body io.Reader
			if rt.Body {
				body = strings.NewReader(`{"__probe":1}`)
			} else {
				path += "?__probe=1"
			}
			req, err := http.NewRequest(rt.Method, srv.URL+path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var e op.Envelope
			json.NewDecoder(res.Body).Decode(&e)
			res.Body.Close()
			srv.Close()
			switch {
			case admitted && (res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(e.Error, "__probe")):
				t.Errorf("%s %s (%s) as %s: declared %s, so it must reach validation; got %d %+v", rt.Method, rt.Path, rt.tool(), c, m.Callers, res.StatusCode, e)
			case !admitted && (res.StatusCode != http.StatusForbidden || e.ErrorCategory != "denied" || !strings.Contains(e.Error, c.String())):
				t.Errorf("%s %s (%s) as %s: declared %s, so it must be 403 naming the caller; got %d %+v", rt.Method, rt.Path, rt.tool(), c, m.Callers, res.StatusCode, e)
			}
		}
	}
}
