package testscripts

import (
	"testing"

	"lmtool.dev/lm/pkg/npmtest"
)

// TestUnknownResourceIsNotFound reads resources that do not exist with the
// official TypeScript SDK, over lm mcp and the gateway's /mcp: a job id no
// job has is resource-not-found (-32002) naming the URI, as the MCP
// specification says, not an internal error; a resource that exists still
// reads.
func TestUnknownResourceIsNotFound(t *testing.T) {
	script := npmtest.Skip(t, "clients/read-resources.mjs")
	lm := lmPath(t)
	home := t.TempDir()
	_, base, token := idleGateway(t, home)
	uris := []string{"joblog://nope", "job://nope", "joblog://nope?from=3", "tasks://cwd"}
	faces := map[string][]string{
		"lm mcp":       append([]string{script, "stdio", lm}, uris...),
		"gateway /mcp": append([]string{script, "http", base + "/mcp", token}, uris...),
	}
	for face, args := range faces {
		t.Run(face, func(t *testing.T) {
			read := map[string]resourceRead{}
			for _, r := range nodeClient[resourceRead](t, t.TempDir(), home, args...) {
				read[r.URI] = r
			}
			for _, uri := range uris[:3] {
				r, ok := read[uri]
				if !ok || r.OK || r.Code != -32002 || r.Data.URI != uri {
					t.Errorf("%s: %+v, want error -32002 with data.uri %q", uri, r, uri)
				}
			}
			if r := read["tasks://cwd"]; !r.OK {
				t.Errorf("tasks://cwd: %+v, want it read", r)
			}
		})
	}
}

// resourceRead is one line of read-resources.mjs: a read and how it ended.
type resourceRead struct {
	URI     string
	OK      bool
	Code    int
	Message string
	Data    struct{ URI string }
}
