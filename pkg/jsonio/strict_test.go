package jsonio

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeStrict(t *testing.T) {
	type in struct {
		A int    `json:"a"`
		B string `json:"b"`
	}
	for _, tc := range []struct {
		name, data, want string
	}{
		{"unknown field", `{"a":1,"tags":[]}`, `unknown field "tags"`},
		{"wrong type", `{"a":"one"}`, `field "a": want int, got string`},
		{"not an object", `[1]`, `want jsonio.in, got array`},
		{"syntax", `{"a":}`, `not valid JSON at byte 6`},
		{"empty", ``, `no JSON value`},
		{"cut short", `{"a":1`, `ends early`},
		{"trailing data", `{"a":1} {"a":2}`, `unexpected data after the JSON value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v in
			err := DecodeStrict([]byte(tc.data), &v)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "json: ") {
				t.Errorf("DecodeStrict(%q) = %v, want an error saying %q", tc.data, err, tc.want)
			}
		})
	}
	var v in
	if err := DecodeStrict([]byte(" {\"a\":1,\"b\":\"x\"}\n"), &v); err != nil || v != (in{1, "x"}) {
		t.Errorf("a sound document: %+v, %v", v, err)
	}
}

func TestDecodeStrictNumbers(t *testing.T) {
	var v map[string]any
	if err := DecodeStrictNumbers([]byte(`{"n":12345678901234567890}`), &v); err != nil || v["n"] != json.Number("12345678901234567890") {
		t.Errorf("got %#v, %v; want the number's exact digits", v, err)
	}
}
