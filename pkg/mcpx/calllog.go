package mcpx

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"lmtool.dev/lm/pkg/op"
)

// CallLog logs each tool call: its tool and whether it failed, and for
// get_user_request the agent it was credited to, how long it waited and
// what it returned (an instruction or the empty answer), so a person
// reading the log can tell an agent that waited in vain from one that got
// work. Both MCP faces use it: lm mcp into its log file, the gateway into
// its log.
func CallLog(log *slog.Logger) *server.Hooks {
	hooks := &server.Hooks{}
	hooks.AddAfterCallTool(func(ctx context.Context, _ any, req *mcp.CallToolRequest, result any) {
		attrs := []any{"tool", req.Params.Name}
		res, ok := result.(*mcp.CallToolResult)
		if ok {
			attrs = append(attrs, "error", res.IsError)
		}
		if req.Params.Name == "get_user_request" && ok && !res.IsError {
			var out struct {
				ResultType string  `json:"result_type"`
				Waited     float64 `json:"waited_seconds"`
			}
			if raw, err := json.Marshal(res.StructuredContent); err == nil {
				json.Unmarshal(raw, &out)
			}
			requested, _ := req.GetArguments()["agent_id"].(string)
			caller, _ := op.CallerFrom(ctx)
			attrs = append(attrs, "agent_id", op.AgentID(requested, caller.Name, clientName(ctx, *req)),
				"result_type", out.ResultType, "waited_seconds", out.Waited)
		}
		log.Info("tool call", attrs...)
	})
	return hooks
}
