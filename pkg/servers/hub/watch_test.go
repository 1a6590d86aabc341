package hub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/servers"
)

// edit replaces servers.json the way editors save: a new file renamed over
// the old one.
func edit(t *testing.T, home, content string) {
	t.Helper()
	tmp := filepath.Join(home, ".servers.json.swp")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, servers.Path(home)); err != nil {
		t.Fatal(err)
	}
}

// awaitServers polls GET /servers until ok accepts the answer.
func awaitServers(t *testing.T, url, what string, ok func(servers.StatusOutput) bool) servers.StatusOutput {
	t.Helper()
	var out servers.StatusOutput
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		res, err := http.Get(url + "/servers")
		if err != nil {
			t.Fatal(err)
		}
		out = servers.StatusOutput{}
		err = json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if ok(out) {
			return out
		}
	}
	t.Fatalf("GET /servers never showed %s; last: %+v", what, out)
	return out
}

func described(out servers.StatusOutput) string {
	var parts []string
	for _, s := range out.Servers {
		parts = append(parts, s.Name+":"+s.Description)
	}
	return strings.Join(parts, " ")
}

func TestHandEditsToTheServersFileAreApplied(t *testing.T) {
	server := func(desc string) string {
		return fmt.Sprintf(`{"command": "sh", "args": ["-c", "exit 0"], "description": %q}`, desc)
	}
	h, url := startHub(t, `{"mcpServers": {"a": `+server("first")+`}}`)
	home := h.home

	edit(t, home, `{"mcpServers": {"a": `+server("first")+`, "b": `+server("new")+`}}`)
	awaitServers(t, url, "b added", func(o servers.StatusOutput) bool { return described(o) == "a:first b:new" })

	edit(t, home, `{"mcpServers": {"b": `+server("changed")+`}}`)
	awaitServers(t, url, "a removed and b changed", func(o servers.StatusOutput) bool { return described(o) == "b:changed" })

	// An invalid edit is reported and changes nothing.
	edit(t, home, `{"mcpServers": {"b": {"command": 7}}}`)
	out := awaitServers(t, url, "the error", func(o servers.StatusOutput) bool { return o.ConfigError != "" })
	if described(out) != "b:changed" || !strings.Contains(out.ConfigError, "command") {
		t.Fatalf("after an invalid edit: %s, error %q", described(out), out.ConfigError)
	}

	// Written in place, as some editors and 'echo >' do.
	if err := os.WriteFile(servers.Path(home), []byte(`{"mcpServers": {"c": `+server("fixed")+`}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	awaitServers(t, url, "the fixed file applied", func(o servers.StatusOutput) bool {
		return described(o) == "c:fixed" && o.ConfigError == ""
	})
}
