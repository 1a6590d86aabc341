package model

import (
	"context"
	"encoding/json"
)

// ollama speaks Ollama's native API: POST /api/chat with stream false and
// the schema in format; POST /api/embed.
type ollama struct{}

type ollamaChatRequest struct {
	Model    string          `json:"model"`
	Messages []Message       `json:"messages"`
	Stream   bool            `json:"stream"`
	Format   json.RawMessage `json:"format,omitempty"`
	Options  map[string]any  `json:"options,omitempty"`
}

type ollamaChatResponse struct {
	Message         Message `json:"message"`
	Done            bool    `json:"done"`
	PromptEvalCount int     `json:"prompt_eval_count"`
	EvalCount       int     `json:"eval_count"`
}

func (ollama) chat(ctx context.Context, c *Client, msgs []Message, format json.RawMessage) (reply, error) {
	req := ollamaChatRequest{Model: c.cfg.Model, Messages: msgs, Format: format,
		Options: map[string]any{"temperature": 0}} // the same question gets the same answer
	var res ollamaChatResponse
	if err := c.post(ctx, "/api/chat", req, &res); err != nil {
		return reply{}, err
	}
	return reply{content: res.Message.Content, tokens: res.PromptEvalCount + res.EvalCount}, nil
}
