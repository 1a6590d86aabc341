package model

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"lmtool.dev/lm/pkg/config"
	"lmtool.dev/lm/pkg/duration"
	"lmtool.dev/lm/pkg/op"
)

// Providers are the wire protocols a model can be reached by.
const (
	Ollama = "ollama" // Ollama's /api/chat and /api/embed
	OpenAI = "openai" // OpenAI-compatible /v1/chat/completions
)

// Config is the [model] table of $LM_HOME/config.toml, after the
// environment's overrides (LM_MODEL_PROVIDER, LM_MODEL_URL, LM_MODEL) and
// Ollama's own variables where those leave a gap (OLLAMA_MODEL,
// OLLAMA_HOST).
// The model is off until a model name is set.
type Config struct {
	Provider            string   `toml:"provider"`
	URL                 string   `toml:"url"`
	Model               string   `toml:"model"`
	Timeout             Duration `toml:"timeout"`
	MaxRetries          int      `toml:"max_retries"`
	ConfidenceThreshold float64  `toml:"confidence_threshold"`
	// APIKey comes only from LM_MODEL_API_KEY, so config.toml never holds a
	// secret; it is sent as a bearer token to OpenAI-compatible servers.
	APIKey string `toml:"-"`
	// Source names where the settings came from, for messages.
	Source string `toml:"-"`
}

// Defaults: a local Ollama, 60 s a request (a cold model can take that long
// to load), two retries and the spec's confidence threshold.
const (
	DefaultOllamaURL           = "http://127.0.0.1:11434"
	DefaultTimeout             = 60 * time.Second
	DefaultMaxRetries          = 2
	DefaultConfidenceThreshold = 0.7
)

// Duration is a time.Duration written as lm writes durations ("30s", "2m").
type Duration time.Duration

// UnmarshalText parses "30s", "2m", "1500ms".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := duration.Parse(string(b))
	if err != nil {
		return fmt.Errorf("timeout %q: want %s", b, duration.Forms)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration back as a string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Enabled reports whether a model is configured at all.
func (c Config) Enabled() bool { return c.Model != "" }

// ConfigPath is where the user's settings live.
func ConfigPath(home string) string { return config.Path(home) }

// Load reads the [model] table of home's config.toml (a missing file or
// table means no model), applies the environment's overrides and defaults,
// and checks the result. Keys this package does not know inside [model]
// are errors; other tables belong to other parts of lm and are left alone.
// lookupEnv reads the caller's environment (op.Env.LookupEnv).
func Load(home string, lookupEnv func(string) (string, bool)) (Config, error) {
	path := ConfigPath(home)
	cfg := Config{Provider: Ollama, Timeout: Duration(DefaultTimeout), MaxRetries: DefaultMaxRetries,
		ConfidenceThreshold: DefaultConfidenceThreshold, Source: path}
	if err := config.Table(home, "model", &cfg); err != nil {
		return cfg, op.Errorf(op.KindInvalid, "%v", err).
			WithHint("[model] takes provider, url, model, timeout, max_retries and confidence_threshold")
	}
	for env, field := range map[string]*string{"LM_MODEL_PROVIDER": &cfg.Provider, "LM_MODEL_URL": &cfg.URL, "LM_MODEL": &cfg.Model} {
		if v, ok := lookupEnv(env); ok {
			*field = v
			cfg.Source = path + " and the environment"
		}
	}
	cfg.APIKey, _ = lookupEnv("LM_MODEL_API_KEY")
	cfg.applyOllamaEnv(lookupEnv)
	cfg.applyDefaults()
	if err := cfg.check(); err != nil {
		return cfg, op.Errorf(op.KindInvalid, "model settings (%s): %v", cfg.Source, err)
	}
	return cfg, nil
}

// applyOllamaEnv falls back on Ollama's own variables, read after lm's
// settings and only where those leave a gap: OLLAMA_MODEL (used by
// Ollama-based tools) names the model, OLLAMA_HOST the server, as the
// ollama command reads it.
func (c *Config) applyOllamaEnv(lookupEnv func(string) (string, bool)) {
	if v, ok := lookupEnv("OLLAMA_MODEL"); ok && c.Model == "" && strings.TrimSpace(v) != "" {
		c.Model = strings.TrimSpace(v)
		c.Source += " and OLLAMA_MODEL"
	}
	if v, ok := lookupEnv("OLLAMA_HOST"); ok && c.URL == "" && c.Provider == Ollama && strings.TrimSpace(v) != "" {
		c.URL = ollamaHost(v)
		c.Source += " and OLLAMA_HOST"
	}
}

// ollamaHost reads OLLAMA_HOST as Ollama does: [scheme://]host[:port][/path],
// the scheme http by default, the port 11434 without a scheme (80 or 443
// with one), the host 127.0.0.1 when only a port is given.
func ollamaHost(s string) string {
	s = strings.Trim(strings.TrimSpace(s), `"'`)
	port := "11434"
	scheme, hostport, ok := strings.Cut(s, "://")
	switch {
	case !ok:
		scheme, hostport = "http", s
	case scheme == "http":
		port = "80"
	case scheme == "https":
		port = "443"
	}
	hostport, path, _ := strings.Cut(hostport, "/")
	host, p, err := net.SplitHostPort(hostport)
	switch {
	case err != nil:
		host = "127.0.0.1"
		if ip := net.ParseIP(strings.Trim(hostport, "[]")); ip != nil {
			host = ip.String()
		} else if hostport != "" {
			host = hostport
		}
	case p != "":
		port = p
	}
	if host == "" {
		host = "127.0.0.1"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(host, port)}
	if path != "" {
		u.Path = "/" + path
	}
	return u.String()
}

// applyDefaults fills in what depends on other settings.
func (c *Config) applyDefaults() {
	if c.URL == "" && c.Provider == Ollama {
		c.URL = DefaultOllamaURL
	}
}

func (c Config) check() error {
	if c.Provider != Ollama && c.Provider != OpenAI {
		return fmt.Errorf("provider %q: want %q or %q", c.Provider, Ollama, OpenAI)
	}
	if c.Enabled() {
		u, err := url.Parse(c.URL)
		if c.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("url %q: want an http(s) URL such as %s", c.URL, DefaultOllamaURL)
		}
	}
	switch {
	case c.Timeout <= 0:
		return fmt.Errorf("timeout must be positive")
	case c.MaxRetries < 0 || c.MaxRetries > 10:
		return fmt.Errorf("max_retries must be between 0 and 10, got %d", c.MaxRetries)
	case c.ConfidenceThreshold < 0 || c.ConfidenceThreshold > 1:
		return fmt.Errorf("confidence_threshold must be between 0 and 1, got %g", c.ConfidenceThreshold)
	}
	return nil
}
