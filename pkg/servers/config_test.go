package servers

import (
	"encoding/json"
	"errors"
	"os"
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

func TestResolvedExpandsReferences(t *testing.T) {
	s := &Server{Command: "${env:BIN}", Args: []string{"--key=${env:KEY}", "--token=${secret:api_token}"},
		Env: map[string]string{"T": "${env:KEY}", "API": "Bearer ${secret:api_token}"}}
	env := map[string]string{"BIN": "/bin/srv", "KEY": "k"}
	lookup := func(n string) (string, bool) { v, ok := env[n]; return v, ok }
	asked := 0
	secret := func(name string) (string, error) {
		asked++
		return map[string]string{"api_token": "tok-123"}[name], nil
	}
	r, used, err := s.Resolved(Resolver{Env: lookup, Secret: secret})
	if err != nil || r.Command != "/bin/srv" || r.Args[0] != "--key=k" || r.Args[1] != "--token=tok-123" || r.Env["T"] != "k" ||
		r.Env["API"] != "Bearer tok-123" || used["api_token"] != "tok-123" || len(used) != 1 || asked != 1 {
		t.Fatalf("%+v %v %v (secret asked %d times)", r, used, err, asked)
	}
	if s.Command != "${env:BIN}" || s.Env["API"] != "Bearer ${secret:api_token}" {
		t.Fatal("Resolved changed the configured server")
	}
	_, _, err = s.Resolved(Resolver{Env: func(string) (string, bool) { return "", false },
		Secret: func(name string) (string, error) { return "", &MissingSecretError{Name: name, Where: "nowhere"} }})
	if err == nil || !strings.Contains(err.Error(), "BIN, KEY is not set") || strings.Count(err.Error(), "secret api_token is nowhere") != 1 {
		t.Fatalf("err = %v", err)
	}
	// Secrets missing from the same places are named together; a broken
	// file is named once.
	two := &Server{Command: "srv", Args: []string{"${secret:b}", "${secret:a}"}, Env: map[string]string{"C": "${secret:c}", "D": "${secret:d}"}}
	_, _, err = two.Resolved(Resolver{Env: lookup, Secret: func(name string) (string, error) {
		if name == "c" || name == "d" {
			return "", errors.New("secrets.json is readable by others")
		}
		return "", &MissingSecretError{Name: name, Where: "nowhere"}
	}})
	if err == nil || err.Error() != "secret a, b is nowhere; secrets.json is readable by others" {
		t.Fatalf("err = %v", err)
	}
	// No secret is looked up when nothing refers to one.
	plain := &Server{Command: "srv"}
	if _, _, err := plain.Resolved(Resolver{Env: lookup, Secret: func(string) (string, error) { t.Fatal("secret looked up"); return "", nil }}); err != nil {
		t.Fatal(err)
	}
}

func TestSecretsFileMustBeTheOwners(t *testing.T) {
	home := t.TempDir()
	if s, err := LoadSecrets(home); err != nil || len(s) != 0 {
		t.Fatalf("no file: %v %v", s, err)
	}
	os.WriteFile(SecretsPath(home), []byte(`{"api_token": "tok-123"}`), 0o644)
	os.Chmod(SecretsPath(home), 0o644)
	if _, err := LoadSecrets(home); err == nil || !strings.Contains(err.Error(), "readable by others") || strings.Contains(err.Error(), "tok-123") {
		t.Fatalf("a 0644 file: %v", err)
	}
	os.Chmod(SecretsPath(home), 0o600)
	if s, err := LoadSecrets(home); err != nil || s["api_token"] != "tok-123" {
		t.Fatalf("a 0600 file: %v %v", s, err)
	}
	os.WriteFile(SecretsPath(home), []byte(`{"api_token": 123456789}`), 0o600)
	if _, err := LoadSecrets(home); err == nil || strings.Contains(err.Error(), "123456789") {
		t.Fatalf("a malformed file must not echo its content: %v", err)
	}
	if got := NewScrubber(map[string]string{"api_token": "tok-123"}).Scrub("auth failed for tok-123"); got != "auth failed for ${secret:api_token}" {
		t.Fatalf("scrubbed: %q", got)
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

func TestParseRefusesABadResourcePattern(t *testing.T) {
	_, err := Parse("x.json", []byte(`{"mcpServers": {"a": {"command": "x", "cache_resources": ["file:///["]}}}`))
	if err == nil || !strings.Contains(err.Error(), "cache_resources") || !strings.Contains(err.Error(), "not a valid pattern") {
		t.Fatalf("a bad cache_resources pattern: %v", err)
	}
	cfg, err := Parse("x.json", []byte(`{"mcpServers": {"a": {"command": "x", "cache_resources": ["file:///docs/*"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Servers["a"]; !a.CachesResource("file:///docs/a.md") || a.CachesResource("file:///docs/sub/a.md") || a.CachesResource("demo://x") {
		t.Fatalf("cache_resources matching: %+v", a.CacheResources)
	}
}
