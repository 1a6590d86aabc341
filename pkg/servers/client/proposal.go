package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// The actions of a model's answer in lm servers ask.
const (
	ActionCall = "call" // run a tool
	ActionDone = "done" // the request is answered
)

// Proposal is the model's answer in lm servers ask: a tool call to run, or
// the final answer.
type Proposal struct {
	Action    string         `json:"action" jsonschema:"call or done"`
	Tool      string         `json:"tool,omitempty"`
	Arguments map[string]any `json:"arguments,omitempty"`
	Reason    string         `json:"reason,omitempty" jsonschema:"why the model proposes this call"`
	Answer    string         `json:"answer,omitempty" jsonschema:"with done: the answer to the request, from the results"`
}

// proposalSchema constrains the model's reply (Ollama's format, OpenAI's
// response_format); only lets the final reply, once the step budget is
// spent, be nothing but an answer.
func proposalSchema(actions ...string) *jsonschema.Schema {
	enum := make([]any, len(actions))
	for i, a := range actions {
		enum[i] = a
	}
	return &jsonschema.Schema{
		Type:     "object",
		Required: []string{"action"},
		Properties: map[string]*jsonschema.Schema{
			"action":    {Type: "string", Enum: enum},
			"tool":      {Type: "string"},
			"arguments": {Type: "object"},
			"reason":    {Type: "string"},
			"answer":    {Type: "string"},
		},
	}
}

// The search for a call stays cheap on a runaway reply: it reads at most
// extractLimit bytes and tries at most extractTries opening braces.
const (
	extractLimit = 32 << 10
	extractTries = 64
)

var errNoProposal = errors.New(`no JSON object with "action" ("call" with "tool" and "arguments", or "done" with "answer") was found in the reply`)

// ExtractProposal finds the model's answer in its reply. A model held to
// the format replies with exactly the object; a local model that was not
// often prints its call inside prose or a code fence, or in the shape of a
// native tool call ({"name": …, "arguments": …}, or OpenAI's {"function":
// {"name": …, "arguments": "<JSON text>"}}). The first JSON object in the
// text that reads as an answer wins.
func ExtractProposal(text string) (Proposal, error) {
	if len(text) > extractLimit {
		text = text[:extractLimit]
	}
	if p, ok := proposalFrom([]byte(strings.TrimSpace(text))); ok {
		return p, nil
	}
	i := strings.IndexByte(text, '{')
	for tries := 0; i >= 0 && tries < extractTries; tries++ {
		if p, ok := proposalFrom([]byte(text[i:])); ok {
			return p, nil
		}
		next := strings.IndexByte(text[i+1:], '{')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return Proposal{}, errNoProposal
}

// proposalFrom reads the JSON object at the start of data (anything may
// follow it) as an answer.
func proposalFrom(data []byte) (Proposal, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var obj map[string]any
	if dec.Decode(&obj) != nil || obj == nil {
		return Proposal{}, false
	}
	return normalize(obj)
}

// normalize reads the shapes models write a call in.
func normalize(obj map[string]any) (Proposal, bool) {
	if fn, ok := obj["function"].(map[string]any); ok {
		obj = fn
	}
	action, _ := obj["action"].(string)
	reason, _ := obj["reason"].(string)
	switch action {
	case ActionDone:
		answer, _ := obj["answer"].(string)
		return Proposal{Action: ActionDone, Answer: answer, Reason: reason}, true
	case ActionCall, "":
		tool, _ := obj["tool"].(string)
		if tool == "" {
			tool, _ = obj["name"].(string)
		}
		if tool == "" {
			return Proposal{}, false
		}
		args, ok := argumentsOf(obj)
		if !ok {
			return Proposal{}, false
		}
		return Proposal{Action: ActionCall, Tool: tool, Arguments: args, Reason: reason}, true
	}
	return Proposal{}, false
}

// argumentsOf finds a call's arguments: an object under arguments,
// parameters or args, or that object as JSON text (OpenAI's tool calls).
// A call without any has none.
func argumentsOf(obj map[string]any) (map[string]any, bool) {
	for _, key := range []string{"arguments", "parameters", "args"} {
		switch v := obj[key].(type) {
		case nil:
			continue
		case map[string]any:
			return v, true
		case string:
			dec := json.NewDecoder(strings.NewReader(v))
			dec.UseNumber()
			var args map[string]any
			if dec.Decode(&args) != nil || args == nil {
				return nil, false
			}
			return args, true
		default:
			return nil, false
		}
	}
	return map[string]any{}, true
}
