package testscripts

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifySemanticThroughTheCLI runs `lm verify` with a semantic check
// against a loopback server speaking Ollama's /api/chat, configured through
// $LM_HOME/config.toml as a user would.
func TestVerifySemanticThroughTheCLI(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model  string         `json:"model"`
			Stream *bool          `json:"stream"`
			Format map[string]any `json:"format"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/api/chat" || req.Model != "tiny" ||
			req.Stream == nil || *req.Stream || req.Format["type"] != "object" {
			t.Errorf("request %s: %+v (%v)", r.URL.Path, req, err)
		}
		json.NewEncoder(w).Encode(map[string]any{
			"message": map[string]any{"role": "assistant",
				"content": `{"status":"pass","evidence":"line 1: retry(3)","reason":null,"confidence":0.8}`},
			"done": true, "prompt_eval_count": 50, "eval_count": 7,
		})
	}))
	defer srv.Close()
	home, dir := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[model]\nmodel = \"tiny\"\nurl = \""+srv.URL+"\"\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "fetch.go"), []byte("func get() { retry(3) }\n"), 0o644)

	cmd := exec.Command("lm", "verify", "--root", dir, "--jq", "[.success, .confidence, .tokens_used, .data.results[0].evidence]")
	cmd.Env = lmEnv(home)
	cmd.Stdin = strings.NewReader(`[{"id":"S","file":"fetch.go","condition":{"type":"semantic","value":"get retries"}}]`)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("lm verify: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != `[true,0.8,57,"line 1: func get() { retry(3) }"]` {
		t.Fatalf("lm verify printed %s", got)
	}
}
