package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestMain lets the tests run this binary as a stdio MCP server child
// (LM_HUB_TEST_CHILD names its behaviour): a real process the hub
// spawns, talks MCP to and signals, with the misbehaviour a test needs.
func TestMain(m *testing.M) {
	if kind := os.Getenv("LM_HUB_TEST_CHILD"); kind != "" {
		serveAsChild(kind)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childServer is the command of a test child of the given kind, as a
// servers.json entry's fields (without braces).
func childServer(t testing.TB, kind string, env map[string]string) string {
	t.Helper()
	fields := `"command": ` + strconv.Quote(os.Args[0]) + `, "env": {"LM_HUB_TEST_CHILD": "` + kind + `"`
	for k, v := range env {
		fields += `, ` + strconv.Quote(k) + `: ` + strconv.Quote(v)
	}
	return fields + `}`
}

// serveAsChild serves MCP on stdin/stdout. Every kind has the tool echo;
//   - plain: nothing more;
//   - shapes: tools whose results take each shape a passthrough must keep:
//     fail (a tool error), link (a link to a resource), structured; and
//     hang, which creates the file $HANG_STARTED, waits until its call is
//     cancelled and then creates $HANG_CANCELLED;
//   - slow-ping: answers ping only after 1.5 s (slower than degradedAfter);
//   - grows: its tool grow adds a tool, so it sends tools/list_changed;
//     its tools, prompts and resources have names a client would refuse
//     and two that sanitise to the same name;
//   - clock: its resource clock://now reads as the current time, in
//     nanoseconds, different at every read;
//   - crash-after: exits with status 3 after $CRASH_AFTER (a duration)
//     of serving;
//   - endless: its tool endless begins its answer and writes on without
//     ever ending the line (40 MiB), then waits;
//   - grandchild: starts a process that ignores SIGTERM, writes its pid to
//     $GRANDCHILD_PID, and itself ignores SIGTERM and outlasts the end of
//     its stdin (as a stuck server would);
//   - raw: see serveRaw.
func serveAsChild(kind string) {
	if kind == "raw" {
		serveRaw()
		return
	}
	s := server.NewMCPServer(kind, "1", server.WithToolCapabilities(true), server.WithPromptCapabilities(true), server.WithResourceCapabilities(false, true))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("message")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("Echo: " + req.GetString("message", "")), nil
	})
	var stdin io.Reader = os.Stdin
	switch kind {
	case "slow-ping":
		stdin = delayLines(os.Stdin, `"method":"ping"`, 1500*time.Millisecond)
	case "grows":
		var grown atomic.Int32
		s.AddTool(mcp.NewTool("grow"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name := "grown_" + strconv.Itoa(int(grown.Add(1)))
			s.AddTool(mcp.NewTool(name), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(name), nil
			})
			return mcp.NewToolResultText("added " + name), nil
		})
		noop := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		}
		for _, name := range []string{"files.read", "files_read", "search/all docs", strings.Repeat("very_long_tool_name_", 4)} {
			s.AddTool(mcp.NewTool(name), noop)
		}
		s.AddPrompt(mcp.NewPrompt("summarise: brief"), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("brief", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Summarise."))}), nil
		})
		s.AddResource(mcp.NewResource("file:///notes/today.md", "today's notes.md", mcp.WithMIMEType("text/markdown")),
			func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/markdown", Text: "# Today"}}, nil
			})
	case "shapes":
		s.AddTool(mcp.NewTool("fail"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("the disk is full"), nil
		})
		s.AddTool(mcp.NewTool("link"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("see"), mcp.NewResourceLink("file:///notes/today.md", "today", "", "text/markdown")}}, nil
		})
		s.AddTool(mcp.NewTool("hang"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			os.WriteFile(os.Getenv("HANG_STARTED"), nil, 0o600)
			<-ctx.Done()
			os.WriteFile(os.Getenv("HANG_CANCELLED"), nil, 0o600)
			return nil, ctx.Err()
		})
		s.AddTool(mcp.NewTool("structured"), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultStructuredOnly(map[string]any{"got": req.GetArguments(), "n": 1.5}), nil
		})
	case "clock":
		s.AddResource(mcp.NewResource("clock://now", "now"), func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: strconv.FormatInt(time.Now().UnixNano(), 10)}}, nil
		})
	case "endless":
		s.AddTool(mcp.NewTool("endless"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			io.WriteString(os.Stdout, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`)
			chunk := strings.Repeat("a", 1<<20)
			for range 40 {
				if _, err := io.WriteString(os.Stdout, chunk); err != nil {
					break
				}
			}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	case "crash-after":
		after, err := time.ParseDuration(os.Getenv("CRASH_AFTER"))
		if err != nil {
			panic(err)
		}
		time.AfterFunc(after, func() { os.Exit(3) })
	case "grandchild":
		gc := exec.Command("sh", "-c", `trap "" TERM; exec sleep 300`)
		if err := gc.Start(); err != nil {
			panic(err)
		}
		if err := os.WriteFile(os.Getenv("GRANDCHILD_PID"), []byte(strconv.Itoa(gc.Process.Pid)), 0o600); err != nil {
			panic(err)
		}
		signal.Ignore(syscall.SIGTERM)
	}
	server.NewStdioServer(s).Listen(context.Background(), stdin, os.Stdout)
	if kind == "grandchild" {
		time.Sleep(time.Hour)
	}
}

// delayLines passes r's lines on, holding those containing marker for d.
func delayLines(r io.Reader, marker string, d time.Duration) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(strings.ReplaceAll(line, " ", ""), marker) {
				time.Sleep(d)
			}
			if _, err := io.WriteString(pw, line+"\n"); err != nil {
				return
			}
		}
		pw.CloseWithError(sc.Err())
	}()
	return pr
}

// serveRaw speaks MCP a line at a time without a library, to answer as a
// library would not. Its tools:
//   - pair answers only once a second call of pair is waiting, the later
//     call first, and before them an answer to an id it was never sent and
//     a log notification; each answer's text is "pair " and the call's
//     argument tag;
//   - die exits (status 5) in the middle of its call;
//   - deaf reads nothing more and answers nothing;
//   - flood sends 100,000 ping requests, then reads and answers nothing;
//   - latin1 answers a text whose é is the one byte Latin-1 has for it;
//   - churn sends 100,000 notifications/tools/list_changed, then reads and
//     answers nothing;
//   - chatter sends 100,000 notifications/message, then reads and answers
//     nothing;
//   - big answers a text of 10 MiB of "x", on one line;
//   - echo answers "Echo: " and its argument message.
func serveRaw() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		line, _ := json.Marshal(v)
		out.Write(append(line, '\n'))
		out.Flush()
	}
	answer := func(id json.RawMessage, result any) {
		send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	}
	text := func(s string) any { return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}} }
	var held []json.RawMessage
	var tags []string
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string            `json:"name"`
				Arguments map[string]string `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &msg) != nil || msg.ID == nil {
			continue
		}
		switch msg.Method {
		case "initialize":
			answer(msg.ID, map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "raw", "version": "1"}})
		case "tools/list":
			var tools []any
			for _, name := range []string{"pair", "die", "big", "echo", "nullerror", "deaf", "flood", "churn", "chatter", "latin1"} {
				tools = append(tools, map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}})
			}
			answer(msg.ID, map[string]any{"tools": tools})
		case "tools/call":
			switch msg.Params.Name {
			case "pair":
				held, tags = append(held, msg.ID), append(tags, msg.Params.Arguments["tag"])
				if len(held) == 2 {
					answer(json.RawMessage(`"lm-never-sent"`), text("pair stray"))
					send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "pairing"}})
					answer(held[1], text("pair "+tags[1]))
					answer(held[0], text("pair "+tags[0]))
					held, tags = nil, nil
				}
			case "die":
				os.Exit(5)
			case "big":
				answer(msg.ID, text(strings.Repeat("x", 10<<20)))
			case "nullerror":
				send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": text("fine"), "error": nil})
			case "deaf":
				select {} // reads nothing more, answers nothing
			case "flood":
				// Asks the hub 100,000 pings and reads none of the answers.
				for n := range 100_000 {
					send(map[string]any{"jsonrpc": "2.0", "id": "flood-" + strconv.Itoa(n), "method": "ping"})
				}
				select {}
			case "latin1":
				// Text in Latin-1, which is no UTF-8: what JSON must be.
				out.WriteString(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"content":[{"type":"text","text":"caf` + "\xe9" + `"}]}}` + "\n")
				out.Flush()
			case "churn":
				// Says its tools changed 100,000 times, then reads and
				// answers nothing.
				for range 100_000 {
					send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
				}
				select {}
			case "chatter":
				// Logs 100,000 lines, then reads and answers nothing.
				for n := range 100_000 {
					send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "chatter " + strconv.Itoa(n)}})
				}
				select {}
			default:
				answer(msg.ID, text("Echo: "+msg.Params.Arguments["message"]))
			}
		default:
			answer(msg.ID, map[string]any{})
		}
	}
}
