package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/op"
)

func home(t *testing.T, config string) string {
	t.Helper()
	for _, env := range []string{"LM_MODEL", "LM_MODEL_URL", "LM_MODEL_PROVIDER", "LM_MODEL_API_KEY", "OLLAMA_HOST", "OLLAMA_MODEL"} {
		t.Setenv(env, "")
		os.Unsetenv(env)
	}
	dir := t.TempDir()
	if config != "" {
		if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadIsOffByDefault(t *testing.T) {
	cfg, err := Load(home(t, ""), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Enabled() || cfg.Provider != Ollama || cfg.URL != DefaultOllamaURL || cfg.MaxRetries != 2 ||
		cfg.ConfidenceThreshold != 0.7 || time.Duration(cfg.Timeout) != DefaultTimeout {
		t.Fatalf("defaults = %+v", cfg)
	}
}

func TestLoadReadsTheModelTable(t *testing.T) {
	h := home(t, `
[gateway]
addr = "127.0.0.1:7777" # another part of lm's settings

[model]
provider = "openai"
url = "http://127.0.0.1:8080/v1"
model = "qwen"
timeout = "1500ms"
max_retries = 0
confidence_threshold = 0.9
`)
	cfg, err := Load(h, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Enabled() || cfg.Provider != OpenAI || cfg.URL != "http://127.0.0.1:8080/v1" || cfg.Model != "qwen" ||
		time.Duration(cfg.Timeout) != 1500*time.Millisecond || cfg.MaxRetries != 0 || cfg.ConfidenceThreshold != 0.9 {
		t.Fatalf("cfg = %+v", cfg)
	}
}

func TestEnvironmentOverridesTheFile(t *testing.T) {
	h := home(t, "[model]\nmodel = \"a\"\nurl = \"http://127.0.0.1:1\"\n")
	t.Setenv("LM_MODEL", "b")
	t.Setenv("LM_MODEL_URL", "http://127.0.0.1:2")
	t.Setenv("LM_MODEL_API_KEY", "secret")
	cfg, err := Load(h, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "b" || cfg.URL != "http://127.0.0.1:2" || cfg.APIKey != "secret" || !strings.Contains(cfg.Source, "environment") {
		t.Fatalf("cfg = %+v", cfg)
	}
}

func TestLoadRejectsBadSettings(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{"[model]\nmodle = \"x\"\n", "line 2: unknown key model.modle"},
		{"[model]\nprovider = \"llamafile\"\nmodel = \"x\"\n", `provider "llamafile"`},
		{"[model]\nprovider = \"openai\"\nmodel = \"x\"\n", `url ""`},
		{"[model]\nmodel = \"x\"\nurl = \"localhost:11434\"\n", `url "localhost:11434"`},
		{"[model]\ntimeout = \"soon\"\n", `timeout "soon"`},
		{"[model]\ntimeout = \"-1s\"\n", `timeout "-1s": want a number with a unit`},
		{"[model]\ntimeout = \"0s\"\n", "timeout must be positive"},
		{"[model]\nmax_retries = 11\n", "max_retries must be between 0 and 10"},
		{"[model]\nconfidence_threshold = 1.5\n", "confidence_threshold must be between 0 and 1"},
		{"[model\n", "line 1"},
	} {
		t.Run(tc.config, func(t *testing.T) {
			_, err := Load(home(t, tc.config), os.LookupEnv)
			if op.KindOf(err) != op.KindInvalid || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%q: err = %v, want %q", tc.config, err, tc.want)
			}
		})
	}
}

// Ollama's own variables fill only what lm's settings leave unset.
func TestOllamaEnvironmentIsAFallback(t *testing.T) {
	h := home(t, "")
	t.Setenv("OLLAMA_MODEL", "llama3.2")
	t.Setenv("OLLAMA_HOST", "0.0.0.0:9999")
	cfg, err := Load(h, os.LookupEnv)
	if err != nil || cfg.Model != "llama3.2" || cfg.URL != "http://0.0.0.0:9999" || !strings.Contains(cfg.Source, "OLLAMA_HOST") {
		t.Fatalf("from OLLAMA_*: %+v, %v", cfg, err)
	}
	t.Setenv("LM_MODEL", "qwen")
	t.Setenv("LM_MODEL_URL", "http://127.0.0.1:1234")
	if cfg, _ := Load(h, os.LookupEnv); cfg.Model != "qwen" || cfg.URL != "http://127.0.0.1:1234" {
		t.Errorf("LM_* must win: %+v", cfg)
	}
	os.Unsetenv("LM_MODEL")
	os.Unsetenv("LM_MODEL_URL")
	h = home(t, "[model]\nmodel = \"mistral\"\nurl = \"http://10.0.0.2:11434\"\n")
	t.Setenv("OLLAMA_MODEL", "llama3.2")
	t.Setenv("OLLAMA_HOST", "example.com")
	if cfg, _ := Load(h, os.LookupEnv); cfg.Model != "mistral" || cfg.URL != "http://10.0.0.2:11434" {
		t.Errorf("config.toml must win: %+v", cfg)
	}
	h = home(t, "[model]\nprovider = \"openai\"\nurl = \"http://127.0.0.1:8080/v1\"\n")
	t.Setenv("OLLAMA_MODEL", "llama3.2")
	t.Setenv("OLLAMA_HOST", "example.com")
	if cfg, _ := Load(h, os.LookupEnv); cfg.Model != "llama3.2" || cfg.URL != "http://127.0.0.1:8080/v1" {
		t.Errorf("OLLAMA_HOST is not an OpenAI-compatible server's address: %+v", cfg)
	}
}

// OLLAMA_HOST's forms, as the ollama command reads them.
func TestOllamaHost(t *testing.T) {
	for in, want := range map[string]string{
		"":                             "http://127.0.0.1:11434",
		"0.0.0.0":                      "http://0.0.0.0:11434",
		":8080":                        "http://127.0.0.1:8080",
		"example.com":                  "http://example.com:11434",
		"example.com:1234":             "http://example.com:1234",
		"http://example.com":           "http://example.com:80",
		"https://example.com":          "https://example.com:443",
		"https://example.com:8443/api": "https://example.com:8443/api",
		"[::1]:11435":                  "http://[::1]:11435",
		"::1":                          "http://[::1]:11434",
		` "10.0.0.5:11434" `:           "http://10.0.0.5:11434",
	} {
		if got := ollamaHost(in); got != want {
			t.Errorf("ollamaHost(%q) = %q, want %q", in, got, want)
		}
	}
}
