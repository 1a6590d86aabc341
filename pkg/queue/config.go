package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/op"
)

// ConfigInput reads or changes settings: KEY shows one setting, KEY=VALUE
// sets it; the typed fields set settings too (the MCP and HTTP form).
type ConfigInput struct {
	Assign                 []string `json:"assign,omitempty" jsonschema:"KEY to show a setting or KEY=VALUE to set it"`
	DefaultWaitSeconds     *int     `json:"default_wait_seconds,omitempty" jsonschema:"seconds get_user_request waits (0-86400)"`
	DefaultEmptyResponse   *string  `json:"default_empty_response,omitempty" jsonschema:"text returned when the wait ends empty; null or empty text clears it, so such a wait gives result_type empty"`
	AgentStaleAfterSeconds *int     `json:"agent_stale_after_seconds,omitempty" jsonschema:"seconds after which an agent shows idle (1-86400)"`

	// clearEmptyResponse records "default_empty_response": null, which
	// spec 000 allows: the setting has no text, unlike a field left out.
	clearEmptyResponse bool
}

// UnmarshalJSON tells "default_empty_response": null (clear the setting)
// from the field left out (keep it), which a pointer alone cannot.
func (in *ConfigInput) UnmarshalJSON(data []byte) error {
	type fields ConfigInput
	if err := json.Unmarshal(data, (*fields)(in)); err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	v, set := raw["default_empty_response"]
	in.clearEmptyResponse = set && string(bytes.TrimSpace(v)) == "null"
	return nil
}

// ConfigOutput holds the requested settings (all of them unless some were
// named) and any warnings about the values.
type ConfigOutput struct {
	DefaultWaitSeconds     *int     `json:"default_wait_seconds,omitempty"`
	DefaultEmptyResponse   *string  `json:"default_empty_response,omitempty"`
	AgentStaleAfterSeconds *int     `json:"agent_stale_after_seconds,omitempty"`
	Warnings               []string `json:"warnings,omitempty"`
}

var settingKeys = []string{"default_wait_seconds", "default_empty_response", "agent_stale_after_seconds"}

// RefineSchema states the bounds.
func (*ConfigInput) RefineSchema(s *jsonschema.Schema) {
	s.Properties["default_wait_seconds"].Minimum = ptr(0.0)
	s.Properties["default_wait_seconds"].Maximum = ptr(float64(MaxWaitSeconds))
	s.Properties["agent_stale_after_seconds"].Minimum = ptr(1.0)
	s.Properties["agent_stale_after_seconds"].Maximum = ptr(float64(MaxWaitSeconds))
}

// Validate parses KEY=VALUE pairs into the typed fields and checks bounds,
// so nothing is written unless every value is acceptable.
func (in *ConfigInput) Validate() error {
	if in.clearEmptyResponse {
		in.DefaultEmptyResponse = new(string)
	}
	for _, a := range in.Assign {
		key, value, isSet := strings.Cut(a, "=")
		key = strings.TrimSpace(key)
		switch key {
		case "default_wait_seconds", "agent_stale_after_seconds":
			if !isSet {
				continue
			}
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil {
				return op.Errorf(op.KindInvalid, "%s must be a whole number of seconds, got %q", key, value)
			}
			if key == "default_wait_seconds" {
				in.DefaultWaitSeconds = &n
			} else {
				in.AgentStaleAfterSeconds = &n
			}
		case "default_empty_response":
			if isSet {
				in.DefaultEmptyResponse = &value
			}
		default:
			return op.Errorf(op.KindInvalid, "unknown setting %q", key).WithHint("settings: %s", strings.Join(settingKeys, ", "))
		}
	}
	if w := in.DefaultWaitSeconds; w != nil && (*w < 0 || *w > MaxWaitSeconds) {
		return op.Errorf(op.KindInvalid, "default_wait_seconds must be between 0 and %d, got %d", MaxWaitSeconds, *w)
	}
	if s := in.AgentStaleAfterSeconds; s != nil && (*s < 1 || *s > MaxWaitSeconds) {
		return op.Errorf(op.KindInvalid, "agent_stale_after_seconds must be between 1 and %d, got %d", MaxWaitSeconds, *s)
	}
	return nil
}

func (in *ConfigInput) changes() bool {
	return in.DefaultWaitSeconds != nil || in.DefaultEmptyResponse != nil || in.AgentStaleAfterSeconds != nil
}

// Config shows and changes the queue settings.
func Config(ctx context.Context, env *op.Env, in ConfigInput) (ConfigOutput, error) {
	var s Settings
	run := view
	if in.changes() {
		run = update
	}
	err := run(ctx, env, func(t *tx) error {
		s = t.settings()
		if !in.changes() {
			return nil
		}
		if in.DefaultWaitSeconds != nil {
			s.DefaultWaitSeconds = *in.DefaultWaitSeconds
		}
		if in.DefaultEmptyResponse != nil {
			s.DefaultEmptyResponse = *in.DefaultEmptyResponse
		}
		if in.AgentStaleAfterSeconds != nil {
			s.AgentStaleAfterSeconds = *in.AgentStaleAfterSeconds
		}
		if err := t.PutSettings(s); err != nil {
			return err
		}
		return t.emit(EventConfigUpdated, s)
	})
	if err != nil {
		return ConfigOutput{}, err
	}
	out := ConfigOutput{DefaultWaitSeconds: &s.DefaultWaitSeconds, DefaultEmptyResponse: &s.DefaultEmptyResponse, AgentStaleAfterSeconds: &s.AgentStaleAfterSeconds}
	if shown := shownKeys(in.Assign); len(shown) > 0 {
		if !shown["default_wait_seconds"] {
			out.DefaultWaitSeconds = nil
		}
		if !shown["default_empty_response"] {
			out.DefaultEmptyResponse = nil
		}
		if !shown["agent_stale_after_seconds"] {
			out.AgentStaleAfterSeconds = nil
		}
	}
	if in.DefaultWaitSeconds != nil && s.DefaultWaitSeconds > ClientTimeoutSeconds {
		w := fmt.Sprintf("default_wait_seconds is %d: most MCP clients abort a tool call after about 60 s, so waits above %d s may end in a client timeout instead of a default response", s.DefaultWaitSeconds, ClientTimeoutSeconds)
		out.Warnings = append(out.Warnings, w)
		fmt.Fprintf(env.Stderr, "lm: warning: %s\n", w)
	}
	return out, nil
}

// shownKeys are the settings named without a value, which limit the output.
func shownKeys(assign []string) map[string]bool {
	shown := map[string]bool{}
	for _, a := range assign {
		if !strings.Contains(a, "=") {
			shown[strings.TrimSpace(a)] = true
		}
	}
	return shown
}

// The environment variables that seed a new store's settings, for
// containers and CI where nobody opens the page to set them.
const (
	EnvWaitSeconds       = "LM_DEFAULT_WAIT_SECONDS"
	EnvEmptyResponse     = "LM_DEFAULT_EMPTY_RESPONSE"
	EnvStaleAfterSeconds = "LM_AGENT_STALE_AFTER_SECONDS"
)

// seededSettings are the settings a store starts with: the defaults, with
// any of the three variables set in the environment instead (an empty
// number is unset; an empty text is no text). A value out of bounds is an
// error naming the variable, not a silent default.
func seededSettings(env *op.Env) (Settings, error) {
	s := DefaultSettings()
	for _, v := range []struct {
		name     string
		into     *int
		min, max int
	}{
		{EnvWaitSeconds, &s.DefaultWaitSeconds, 0, MaxWaitSeconds},
		{EnvStaleAfterSeconds, &s.AgentStaleAfterSeconds, 1, MaxWaitSeconds},
	} {
		raw := env.Getenv(v.name)
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(raw))
		if err != nil || n < v.min || n > v.max {
			return s, op.Errorf(op.KindInvalid, "%s=%q: the queue's settings need a whole number of seconds from %d to %d", v.name, raw, v.min, v.max).
				WithHint("fix or unset %s; it seeds the settings of a store that has none yet", v.name)
		}
		*v.into = n
	}
	if text, set := env.LookupEnv(EnvEmptyResponse); set {
		s.DefaultEmptyResponse = text
	}
	return s, nil
}
