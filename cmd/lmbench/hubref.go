package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// httpEchoServer serves the hub benchmark's references: a bare mcp-go
// streamable-HTTP server (stateless, as the gateway's /mcp is) with one
// tool, echo. Without a child it answers like server-everything's echo
// itself: what loopback HTTP and mcp-go's transport cost. With a child (a
// stdio server's command) it forwards every call to the child's echo over
// one mcp-go client session: the least any MCP proxy does, so the
// gateway's time beyond it is the hub's own.
func httpEchoServer(addrFile string, child ...string) error {
	echo := func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("Echo: " + req.GetString("message", "")), nil
	}
	if len(child) > 0 {
		cl, err := client.NewStdioMCPClient(child[0], nil, child[1:]...)
		if err != nil {
			return fmt.Errorf("start %s: %w", child[0], err)
		}
		defer cl.Close()
		if err := initialize(context.Background(), cl); err != nil {
			return err
		}
		echo = func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return cl.CallTool(ctx, req)
		}
	}
	s := server.NewMCPServer("echo", "1", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("message")), echo)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if err := os.WriteFile(addrFile, []byte(ln.Addr().String()), 0o600); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(s, server.WithStateLess(true)))
	// Stopped by an interrupt, even when started from a shell that ignores
	// it in background jobs.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	srv := &http.Server{Handler: mux}
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
