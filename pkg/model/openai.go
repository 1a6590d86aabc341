package model

import (
	"context"
	"encoding/json"
	"strings"

	"lmtool.dev/lm/pkg/op"
)

// openAI speaks the OpenAI-compatible API that llama.cpp, vLLM, LM Studio
// and others serve: POST {url}/chat/completions with a json_schema
// response_format. The url is the API's base, with or without its /v1.
type openAI struct{}

func (openAI) path(c *Client, endpoint string) string {
	if strings.HasSuffix(strings.TrimSuffix(c.cfg.URL, "/"), "/v1") {
		return endpoint
	}
	return "/v1" + endpoint
}

type openAIUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (u openAIUsage) tokens() int {
	if u.TotalTokens > 0 {
		return u.TotalTokens
	}
	return u.PromptTokens + u.CompletionTokens
}

func (o openAI) chat(ctx context.Context, c *Client, msgs []Message, format json.RawMessage) (reply, error) {
	req := map[string]any{"model": c.cfg.Model, "messages": msgs, "temperature": 0}
	if format != nil {
		req["response_format"] = map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "answer", "schema": format}}
	}
	var res struct {
		Choices []struct {
			Message Message `json:"message"`
		} `json:"choices"`
		Usage openAIUsage `json:"usage"`
	}
	if err := c.post(ctx, o.path(c, "/chat/completions"), req, &res); err != nil {
		return reply{}, err
	}
	if len(res.Choices) == 0 {
		return reply{tokens: res.Usage.tokens()}, op.Errorf(op.KindUnavailable, "model server %s answered with no choices", c.cfg.URL).
			WithCategory(CategoryInvalidOutput)
	}
	return reply{content: res.Choices[0].Message.Content, tokens: res.Usage.tokens()}, nil
}
