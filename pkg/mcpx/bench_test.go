package mcpx

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/buildinfo"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/store"
)

// BenchmarkStdioRoundTrip measures one tools/call of a trivial tool through
// ServeStdio over pipes, as an MCP client sees it.
func BenchmarkStdioRoundTrip(b *testing.B) {
	env := op.Env{Store: store.New(filepath.Join(b.TempDir(), "lm.db"), time.Second), Stderr: io.Discard, Now: time.Now}
	s, err := NewServer(buildinfo.Ops(), nil, env, "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ServeStdio(ctx, s, inR, outW, nil)
	out := bufio.NewReader(outR)
	call := func(id int, method, params string) {
		fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
		want := fmt.Sprintf(`"id":%d,`, id)
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if strings.Contains(line, want) {
				return
			}
		}
	}
	call(0, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
	b.ResetTimer()
	for i := range b.N {
		call(i+1, "tools/call", `{"name":"lm_version","arguments":{}}`)
	}
}
