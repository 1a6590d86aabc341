package mcpx

import (
	"encoding/json"
	"testing"
)

func TestPeek(t *testing.T) {
	for _, tc := range []struct {
		msg, id, method string
		response, ok    bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":"}"}}`, "1", "tools/call", false, true},
		{`{"params":{"x":[1,{"id":9}]},"method":"ping","id":"a\"b","jsonrpc":"2.0"}`, `"a\"b"`, "ping", false, true},
		{`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`, "7", "", true, true},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}`, "null", "", true, true},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", "notifications/initialized", false, true},
		{` { "id" : 3 , "result" : true } `, "3", "", true, true},
		{`not json`, "", "", false, false},
		{`{"id":1,"method":`, "", "", false, false},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			id, method, response, ok := peek([]byte(tc.msg))
			if string(id) != tc.id || method != tc.method || response != tc.response || ok != tc.ok {
				t.Errorf("peek(%s) = %q %q %v %v", tc.msg, id, method, response, ok)
			}
		})
	}
}

// FuzzPeek checks peek against encoding/json on valid messages and that it
// never panics on anything.
func FuzzPeek(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"x","params":{}}`, `{"id":"q","result":[1,"]"]}`, `{"a":{"b":[]}}`, `{`, `[]`, `{"id":1e3,"error":null}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		id, method, _, ok := peek([]byte(msg))
		var want struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		if !ok || json.Unmarshal([]byte(msg), &want) != nil {
			return
		}
		if len(want.ID) > 0 && string(want.ID) != string(id) {
			t.Fatalf("id %q, encoding/json says %q", id, want.ID)
		}
		if want.Method != nil && method != "" && *want.Method != method {
			t.Fatalf("method %q, encoding/json says %q", method, *want.Method)
		}
	})
}
