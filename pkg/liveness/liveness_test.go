package liveness

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestMain lets the test run this binary as a stdio MCP server that stops
// answering once the file $LIVENESS_MUTE exists.
func TestMain(m *testing.M) {
	if mute := os.Getenv("LIVENESS_MUTE"); mute != "" {
		s := server.NewMCPServer("mute", "1", server.WithToolCapabilities(false))
		pr, pw := io.Pipe()
		go func() {
			sc := bufio.NewScanner(os.Stdin)
			for sc.Scan() {
				if _, err := os.Stat(mute); err == nil {
					continue
				}
				pw.Write(append(sc.Bytes(), '\n'))
			}
			pw.Close()
		}()
		server.NewStdioServer(s).Listen(context.Background(), pr, os.Stdout)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestProbeFindsAServerThatStoppedAnswering, on every protocol version: a
// server that answered the handshake and then went silent fails the probe.
func TestProbeFindsAServerThatStoppedAnswering(t *testing.T) {
	for _, version := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			mute := filepath.Join(t.TempDir(), "mute")
			c, err := client.NewStdioMCPClientWithOptions(os.Args[0], []string{"LIVENESS_MUTE=" + mute}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req := mcp.InitializeRequest{}
			req.Params.ProtocolVersion = version
			req.Params.ClientInfo = mcp.Implementation{Name: "probe", Version: "1"}
			if _, err := c.Initialize(ctx, req); err != nil {
				t.Fatal(err)
			}
			if c.ProtocolVersion() != version {
				t.Fatalf("negotiated %s, not %s", c.ProtocolVersion(), version)
			}
			if err := Probe(ctx, c); err != nil {
				t.Fatalf("a live server fails the probe: %v", err)
			}
			if err := os.WriteFile(mute, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			pctx, stop := context.WithTimeout(ctx, time.Second)
			defer stop()
			if err := Probe(pctx, c); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("a silent server passes the probe: %v", err)
			}
		})
	}
}
