package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// A child's requests beyond the maxServing answered at once get an error
// saying the gateway is busy, not silence: a server waits for an answer to
// each of its requests, and one it never gets holds it for ever.
func TestRequestsBeyondTheLimitAreAnsweredBusy(t *testing.T) {
	childOut, hubOut := io.Pipe() // what the child writes, the hub reads
	hubIn, childIn := io.Pipe()   // what the hub writes, the child reads
	c := newStdioConn(childOut, childIn)
	t.Cleanup(func() { c.Close(); hubOut.Close() })
	release := make(chan struct{})
	c.SetRequestHandler(func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		<-release // a person has yet to answer a sampling request
		return transport.NewJSONRPCResultResponse(req.ID, json.RawMessage(`{}`)), nil
	})
	c.Start(t.Context())

	const extra = 5
	go func() {
		for n := range maxServing + extra {
			fmt.Fprintf(hubOut, `{"jsonrpc":"2.0","id":%d,"method":"sampling/createMessage","params":{}}`+"\n", n)
		}
	}()
	answers := make(chan transport.JSONRPCResponse)
	go func() {
		sc := bufio.NewScanner(hubIn)
		for sc.Scan() {
			var res transport.JSONRPCResponse
			if json.Unmarshal(sc.Bytes(), &res) != nil {
				t.Errorf("not an answer: %q", sc.Text())
			}
			answers <- res
		}
	}()
	next := func() transport.JSONRPCResponse {
		t.Helper()
		select {
		case res := <-answers:
			return res
		case <-time.After(5 * time.Second):
			t.Fatal("a request of the child's was not answered")
			return transport.JSONRPCResponse{}
		}
	}
	for range extra {
		res := next()
		if res.Error == nil || res.Error.Code != busyCode || res.Error.Message == "" {
			t.Fatalf("a request beyond the limit: want the busy error, got %+v", res)
		}
		if n, _ := res.ID.Value().(int64); n < maxServing {
			t.Errorf("request %v was answered busy while it was being served", res.ID)
		}
	}
	close(release)
	for range maxServing {
		if res := next(); res.Error != nil {
			t.Errorf("a request being served: %+v", res.Error)
		}
	}
}
