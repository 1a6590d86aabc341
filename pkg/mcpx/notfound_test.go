package mcpx

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// The answer to a read of a resource that does not exist becomes what the
// request's protocol version specifies; every other answer stays as it was.
func TestResourceNotFoundAnswers(t *testing.T) {
	legacy := []byte(`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"joblog://nope?from=3"}}`)
	modern := []byte(`{"jsonrpc":"2.0","id":"a","method":"resources/read","params":{"uri":"job://nope","_meta":{"` +
		mcp.MetaKeyProtocolVersion + `":"2026-07-28"}}}`)
	notFound := resourceNotFound{uri: "joblog://nope?from=3", err: errors.New(`no job "nope"`)}
	internal := func(id, msg string) []byte {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "error": map[string]any{"code": mcp.INTERNAL_ERROR, "message": msg}})
		return b
	}
	type answer struct {
		ID    json.RawMessage
		Error struct {
			Code    int
			Message string
			Data    struct{ URI string }
		}
	}
	for _, c := range []struct {
		name     string
		request  []byte
		response []byte
		code     int
		uri      string
	}{
		{"not found, up to 2025-11-25", legacy, internal("7", notFound.Error()), mcp.RESOURCE_NOT_FOUND, "joblog://nope?from=3"},
		{"not found, from 2026-07-28", modern, internal(`"a"`, notFound.Error()), mcp.INVALID_PARAMS, "job://nope"},
		{"another failure", legacy, internal("7", "store is damaged"), mcp.INTERNAL_ERROR, ""},
	} {
		reads := &resourceReads{}
		reads.saw(c.request)
		var got answer
		if err := json.Unmarshal(reads.answer(c.response), &got); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var want answer
		json.Unmarshal(c.response, &want)
		if got.Error.Code != c.code || got.Error.Data.URI != c.uri || string(got.ID) != string(want.ID) || got.Error.Message != want.Error.Message {
			t.Errorf("%s: %+v, want code %d and data.uri %q", c.name, got, c.code, c.uri)
		}
		if _, pending := reads.pending[string(got.ID)]; pending {
			t.Errorf("%s: the answered read is still remembered", c.name)
		}
	}
	// A success, and an answer to a request that was not a read, pass
	// through byte for byte.
	reads := &resourceReads{}
	reads.saw(legacy)
	ok := []byte(`{"jsonrpc":"2.0","id":7,"result":{"contents":[]}}`)
	if got := reads.answer(ok); string(got) != string(ok) {
		t.Errorf("a success became %s", got)
	}
	other := internal("8", notFound.Error())
	if got := reads.answer(other); string(got) != string(other) {
		t.Errorf("the answer to another request became %s", got)
	}
}
