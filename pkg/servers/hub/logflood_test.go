package hub

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/servers"
	"lmtool.dev/lm/pkg/testkit"
)

// A server's log messages reach /mcp's sessions at a rate people read
// them, however fast it sends them: each goes into every session's queue,
// a flood fills them (crowding out every other server's notifications),
// and mcp-go reports each one a full queue drops to the error hooks in a
// goroutine of its own.
func TestAChildsLogFloodIsBounded(t *testing.T) {
	var log testkit.Buffer
	h, url := startHubWith(t, `{"mcpServers": {"raw": {`+childServer(t, "raw", nil)+`, "auto_start": true, "timeout": 1}}}`, &log, true)
	if s := settled(t, h, "raw"); s.State != servers.Running {
		t.Fatalf("raw: %+v", s)
	}
	var dropped atomic.Int64
	h.aggregate.GetHooks().AddOnError(func(context.Context, any, mcp.MCPMethod, any, error) {
		dropped.Add(1)
		time.Sleep(time.Second) // a hook that logs to a slow disk
	})
	cl := connect(t, url+"/mcp") // a session that reads no notification
	before := runtime.NumGoroutine()
	go cl.CallTool(t.Context(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "raw__chatter"}})
	most := 0
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		most = max(most, runtime.NumGoroutine()-before)
	}
	if most > 1000 || dropped.Load() > 1000 {
		t.Errorf("a child's 100,000 log messages took %d goroutines, %d dropped by a session's full queue", most, dropped.Load())
	}
	// The gateway's log says the server's messages are being dropped, and
	// says it once, not once a message.
	if told := strings.Count(log.String(), "server=raw dropped="); told < 1 || told > 2 {
		t.Errorf("the log told of dropped messages %d times in 3 s:\n%.2000s", told, log.String())
	}
}
