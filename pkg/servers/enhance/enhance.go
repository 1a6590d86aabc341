// Package enhance is the gateway's prompt enhancement (spec 004's POST
// /ollama/enhance): a prompt is rewritten by the configured model under
// per-client rules from $LM_HOME/enhancement-rules.json, answered from an
// L1 cache when it was seen before, tried down a chain of fallback models,
// and handed back unchanged, with the reason, whenever no model can help.
// Enhancement never fails the caller: a missing or sleeping model costs the
// prompt its polish, not its delivery.
package enhance

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"lmtool.dev/lm/pkg/httpjson"
	"lmtool.dev/lm/pkg/jsonio"
	"lmtool.dev/lm/pkg/model"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers"
	"lmtool.dev/lm/pkg/servers/cache"
)

// FileName is the rules file inside LM_HOME.
const FileName = "enhancement-rules.json"

// DefaultSystemPrompt is the instruction used when the rules give none.
const DefaultSystemPrompt = "Improve clarity and structure. Preserve intent. Return only the enhanced prompt."

// DefaultClient is the client name used without an X-Client-Name header.
const DefaultClient = "default"

// Path is the rules file in home.
func Path(home string) string { return filepath.Join(home, FileName) }

// Rules is the rules file, in spec 004's shape.
type Rules struct {
	Default Rule            `json:"default"`
	Clients map[string]Rule `json:"clients,omitempty"`
	// FallbackChain lists the models tried, in order, after the rule's own
	// model fails; null ends the chain (the original prompt is returned).
	FallbackChain []*string `json:"fallback_chain,omitempty"`
}

// Rule is how one client's prompts are enhanced. A client's rule
// overrides the default field by field.
type Rule struct {
	Enabled      *bool  `json:"enabled,omitempty"`
	Model        string `json:"model,omitempty"`
	SystemPrompt string `json:"system_prompt,omitempty"`
}

// LoadRules reads the rules file; a missing file means the defaults (on,
// with the model from config.toml). Unknown fields are errors that say
// what is accepted.
func LoadRules(home string) (Rules, error) {
	path := Path(home)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Rules{}, nil
	}
	if err != nil {
		return Rules{}, op.Errorf(op.KindInvalid, "read %s: %v", path, err)
	}
	var r Rules
	if err := jsonio.DecodeStrict(data, &r); err != nil {
		return Rules{}, op.Errorf(op.KindInvalid, "%s: %v", path, err).WithCategory("invalid_config").
			WithHint("the file takes default, clients (by X-Client-Name) and fallback_chain; a rule takes enabled, model and system_prompt")
	}
	return r, nil
}

// For is the rule for a client: the default with the client's fields over it.
func (r Rules) For(client string) Rule {
	rule := r.Default
	if c, ok := r.Clients[client]; ok {
		if c.Enabled != nil {
			rule.Enabled = c.Enabled
		}
		if c.Model != "" {
			rule.Model = c.Model
		}
		if c.SystemPrompt != "" {
			rule.SystemPrompt = c.SystemPrompt
		}
	}
	if rule.SystemPrompt == "" {
		rule.SystemPrompt = DefaultSystemPrompt
	}
	return rule
}

// models is the order in which models are tried for a rule: its own (or
// the configured one), then the fallback chain up to its first null.
func (r Rules) models(rule Rule, configured string) []string {
	var out []string
	add := func(m string) {
		if m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	add(cmp.Or(rule.Model, configured))
	for _, m := range r.FallbackChain {
		if m == nil {
			break
		}
		add(*m)
	}
	return out
}

// Request is the body of POST /ollama/enhance.
type Request struct {
	Prompt string `json:"prompt"`
}

// Result is the answer: the prompt to use, and how it came to be.
type Result struct {
	Prompt   string `json:"prompt" jsonschema:"the enhanced prompt, or the original when it could not be enhanced"`
	Original string `json:"original"`
	Enhanced bool   `json:"enhanced"`
	Client   string `json:"client"`
	Model    string `json:"model,omitempty" jsonschema:"the model that enhanced it"`
	Cached   bool   `json:"cached"`
	// Reason says why the prompt came back unchanged; Category classifies
	// the last model failure (model_unavailable, ollama_unavailable,
	// model_not_loaded, timeout, …).
	Reason     string `json:"reason,omitempty"`
	Category   string `json:"error_category,omitempty"`
	TokensUsed int    `json:"tokens_used,omitempty"`
}

// Enhancer is safe for concurrent use.
type Enhancer struct {
	home string
	// lookupEnv reads the gateway's environment, for the model's settings.
	lookupEnv func(string) (string, bool)
	cache     *cache.Cache
	log       *slog.Logger
}

// New returns an enhancer for home whose cache keeps size results for ttl;
// lookupEnv reads the environment that may override the model's settings.
// It checks the rules file now, so a broken one fails the gateway's start.
func New(home string, lookupEnv func(string) (string, bool), size int, ttl time.Duration, log *slog.Logger) (*Enhancer, error) {
	if _, err := LoadRules(home); err != nil {
		return nil, err
	}
	return &Enhancer{home: home, lookupEnv: lookupEnv, cache: cache.New(size, ttl, time.Now), log: log}, nil
}

// Enhance rewrites prompt for client. Only a missing prompt is an error;
// every other problem returns the prompt unchanged with the reason. The
// rules and the model settings are read on every call, so edits to either
// apply without a restart.
func (e *Enhancer) Enhance(ctx context.Context, client, prompt string) (Result, error) {
	if strings.TrimSpace(prompt) == "" {
		return Result{}, op.Errorf(op.KindInvalid, "the prompt is empty").WithHint(`send {"prompt": "…"}`)
	}
	if client == "" {
		client = DefaultClient
	}
	res := Result{Prompt: prompt, Original: prompt, Client: client}
	unchanged := func(reason string) (Result, error) {
		res.Reason = reason
		e.log.Warn("prompt not enhanced", "client", client, "reason", reason)
		return res, nil
	}
	rules, err := LoadRules(e.home)
	if err != nil {
		return unchanged(err.Error())
	}
	rule := rules.For(client)
	if rule.Enabled != nil && !*rule.Enabled {
		res.Reason = fmt.Sprintf("enhancement is disabled for client %s in %s", client, Path(e.home))
		return res, nil
	}
	cfg, err := model.Load(e.home, e.lookupEnv)
	if err != nil {
		return unchanged(err.Error())
	}
	models := rules.models(rule, cfg.Model)
	if len(models) == 0 {
		res.Category = model.CategoryNotConfigured
		return unchanged(fmt.Sprintf("no model is configured: set model in the [model] table of %s, or in %s", model.ConfigPath(e.home), Path(e.home)))
	}
	var failures []string
	for _, name := range models {
		key, err := cache.KeyOf("enhance", cfg.Provider+" "+cfg.URL, name, []string{rule.SystemPrompt, prompt})
		if err != nil {
			return Result{}, fmt.Errorf("enhance: cache key: %w", err)
		}
		if v, ok := e.cache.Get(key); ok {
			res.Prompt, res.Enhanced, res.Model, res.Cached, res.Category = v.(string), true, name, true, ""
			return res, nil
		}
		enhanced, tokens, err := e.ask(ctx, cfg, name, rule.SystemPrompt, prompt)
		res.TokensUsed += tokens
		if err != nil {
			res.Category = op.EnvelopeOf(err).ErrorCategory
			failures = append(failures, fmt.Sprintf("%s: %v (%s)", name, err, res.Category))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		e.cache.Put(key, enhanced)
		// A model further down the chain answered: the earlier failures'
		// category described an unchanged prompt, which this is not.
		res.Prompt, res.Enhanced, res.Model, res.Category = enhanced, true, name, ""
		return res, nil
	}
	return unchanged("no model could enhance it (" + strings.Join(failures, "; ") + ")")
}

// ask has one model rewrite the prompt.
func (e *Enhancer) ask(ctx context.Context, cfg model.Config, name, system, prompt string) (string, int, error) {
	cfg.Model = name
	client, err := model.New(cfg)
	if err != nil {
		return "", 0, err
	}
	resp, err := client.Chat(ctx, model.Request{Messages: []model.Message{
		{Role: "system", Content: system},
		{Role: "user", Content: prompt},
	}})
	if err != nil {
		return "", resp.TokensUsed, err
	}
	out := strings.TrimSpace(resp.Content)
	if out == "" {
		return "", resp.TokensUsed, errors.New("the model answered with nothing")
	}
	return out, resp.TokensUsed, nil
}

// healthTimeout bounds the model endpoint's check in /health.
const healthTimeout = 2 * time.Second

// Health says whether the model endpoint answers, and how the cache does.
func (e *Enhancer) Health(ctx context.Context) (servers.ModelHealth, servers.CacheStats) {
	st := e.cache.Stats()
	stats := servers.CacheStats{Entries: st.Entries, MaxSize: st.MaxSize, TTLSec: st.TTL.Seconds(), Hits: st.Hits, Misses: st.Misses, Evictions: st.Evictions}
	cfg, err := model.Load(e.home, e.lookupEnv)
	if err != nil {
		return servers.ModelHealth{Error: err.Error(), ErrorCategory: op.EnvelopeOf(err).ErrorCategory}, stats
	}
	m := servers.ModelHealth{Configured: cfg.Enabled(), Provider: cfg.Provider, Model: cfg.Model, URL: withoutCredentials(cfg.URL)}
	if !m.Configured {
		return m, stats
	}
	client, err := model.New(cfg)
	if err == nil {
		began := time.Now()
		if err = client.Reachable(ctx, healthTimeout); err == nil {
			m.Reachable, m.LatencyMS = true, float64(time.Since(began).Microseconds())/1000
		}
	}
	if err != nil {
		m.Error, m.ErrorCategory = err.Error(), op.EnvelopeOf(err).ErrorCategory
	}
	return m, stats
}

// withoutCredentials drops a URL's user information.
func withoutCredentials(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User = nil
	return u.String()
}

// Handler serves POST /ollama/enhance: the client is named by the
// X-Client-Name header, the body is {"prompt": "…"}.
func (e *Enhancer) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			httpjson.Error(w, http.StatusBadRequest, op.Errorf(op.KindInvalid, "the body must be {\"prompt\": \"…\"}: %v", err))
			return
		}
		res, err := e.Enhance(r.Context(), r.Header.Get("X-Client-Name"), req.Prompt)
		if err != nil {
			httpjson.Error(w, op.HTTPStatus(err, http.StatusBadRequest), err)
			return
		}
		httpjson.Write(w, http.StatusOK, res)
	})
}
