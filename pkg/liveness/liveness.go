// Package liveness asks an MCP server whether it still answers, on every
// protocol version.
package liveness

import (
	"context"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// Probe sends the server a request it must answer: ping on the versions
// with the initialize handshake, server/discover from 2026-07-28 on. Ping is
// gone there, and mcp-go's Client.Ping then succeeds without sending
// anything, so a server that stopped answering would pass it.
func Probe(ctx context.Context, c *client.Client) error {
	if mcp.IsModernProtocol(c.ProtocolVersion()) {
		_, err := c.Discover(ctx, mcp.DiscoverRequest{})
		return err
	}
	return c.Ping(ctx)
}
