package hub

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/npmtest"
	"lmtool.dev/lm/pkg/servers"
)

// aggregatedTools are the names /mcp lists that belong to server.
func aggregatedTools(t *testing.T, cl *client.Client, server string) []string {
	t.Helper()
	res, err := cl.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		if strings.HasPrefix(tool.Name, server+Separator) {
			names = append(names, tool.Name)
		}
	}
	return names
}

func TestAStoppedServerLeavesMCPAndClientsAreTold(t *testing.T) {
	everything := npmtest.Skip(t, "mcp-server-everything")
	h, url := startHubWith(t, `{"mcpServers": {"everything": {"command": "`+everything+`", "auto_start": true}}}`, io.Discard, true)
	if s := settled(t, h, "everything"); s.State != servers.Running {
		t.Fatalf("everything: %+v", s)
	}
	cl := connect(t, url+"/mcp", transport.WithContinuousListening())
	changed := toolListChanges(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if len(aggregatedTools(t, cl, "everything")) == 0 {
		t.Fatal("no everything__ tools on /mcp while it runs")
	}
	await := func(what string) {
		t.Helper()
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("no tools/list_changed after %s", what)
		}
	}
	for len(changed) > 0 {
		<-changed
	}

	h.child("everything").stop()
	if names := aggregatedTools(t, cl, "everything"); len(names) != 0 {
		t.Fatalf("a stopped server's tools are still listed: %v", names)
	}
	await("the server stopped")
	if _, err := call(t, cl, "queue_add", nil); err != nil {
		t.Fatalf("lm's own tool after the server stopped: %v", err)
	}

	h.child("everything").start()
	if s := settled(t, h, "everything"); s.State != servers.Running {
		t.Fatalf("restart: %+v", s)
	}
	if len(aggregatedTools(t, cl, "everything")) == 0 {
		t.Fatal("the restarted server's tools are not back on /mcp")
	}
	await("the server came back")
}

// toolListChanges returns a channel that receives a value for each
// tools/list_changed the client is sent from now on.
func toolListChanges(cl *client.Client) <-chan struct{} {
	changed := make(chan struct{}, 16)
	cl.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationToolsListChanged {
			changed <- struct{}{}
		}
	})
	return changed
}
