package servers

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseReadsClientShapesAndDefaults(t *testing.T) {
	cfg, err := Parse("x.json", []byte(`{"servers": {"a": {"type": "stdio", "command": "npx", "args": ["-y", "pkg"]},
		"b": {"type": "streamable-http", "url": "https://example.com/mcp"}}, "inputs": []}`))
	if err != nil {
		t.Fatal(err)
	}
	a, b := cfg.Servers["a"], cfg.Servers["b"]
	if a.Kind() != Stdio || b.Kind() != HTTP || !a.Downloads() || !a.Restarts() || a.RestartLimit() != DefaultMaxRestarts || !a.IsEnabled() {
		t.Fatalf("a=%+v b=%+v", a, b)
	}
}

func TestResolvedExpandsEnvReferences(t *testing.T) {
	s := &Server{Command: "${env:BIN}", Args: []string{"--key=${env:KEY}"}, Env: map[string]string{"T": "${env:KEY}"}}
	env := map[string]string{"BIN": "/bin/srv", "KEY": "k"}
	r, err := s.Resolved(func(n string) (string, bool) { v, ok := env[n]; return v, ok })
	if err != nil || r.Command != "/bin/srv" || r.Args[0] != "--key=k" || r.Env["T"] != "k" {
		t.Fatalf("%+v %v", r, err)
	}
	if s.Command != "${env:BIN}" {
		t.Fatal("Resolved changed the configured server")
	}
	_, err = s.Resolved(func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), "BIN, KEY is not set") {
		t.Fatalf("err = %v", err)
	}
}

func TestExposesHonoursAllowAndDeny(t *testing.T) {
	s := &Server{Tools: &ToolFilter{Allow: []string{"read_*", "echo"}, Deny: []string{"read_secret"}}}
	for tool, want := range map[string]bool{"echo": true, "read_file": true, "read_secret": false, "write": false} {
		if got := s.Exposes(tool); got != want {
			t.Errorf("Exposes(%q) = %v, want %v", tool, got, want)
		}
	}
}

// FuzzParse: any input is either accepted as a valid configuration that
// survives a round trip, or rejected with an error naming the file.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"mcpServers": {"m": {"command": "npx", "args": ["-y", "x"], "env": {"K": "${env:K}"}, "max_restarts": 2}}}`))
	f.Add([]byte(`{"servers": {"r": {"type": "http", "url": "https://x/mcp", "tools": {"deny": ["a*"]}}}}`))
	f.Add([]byte(`{"mcpServers": {"x": {"command": "true", "argz": []}}, "settings": {"cache_ttl": 1.5}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("f.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		again, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse("f.json", again); err != nil {
			t.Fatalf("a parsed configuration does not parse again: %v\n%s", err, again)
		}
	})
}
