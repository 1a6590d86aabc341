package client_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"lmtool.dev/lm/pkg/servers/client"
)

func TestExtractProposalReadsTheShapesModelsWrite(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`{"action":"call","tool":"echo","arguments":{"message":"hi"},"reason":"asked"}`,
			`{"action":"call","tool":"echo","arguments":{"message":"hi"},"reason":"asked"}`},
		{`{"action":"done","answer":"42"}`, `{"action":"done","answer":"42"}`},
		{"I'll call it.\n```json\n{\"name\": \"get-sum\", \"arguments\": {\"a\": 1, \"b\": 2.5}}\n```\nDone.",
			`{"action":"call","tool":"get-sum","arguments":{"a":1,"b":2.5}}`},
		{`<tool_call>{"name": "echo", "parameters": {"message": "x"}}</tool_call>`,
			`{"action":"call","tool":"echo","arguments":{"message":"x"}}`},
		{`{"type":"function","function":{"name":"echo","arguments":"{\"message\":\"from text\"}"}}`,
			`{"action":"call","tool":"echo","arguments":{"message":"from text"}}`},
		{`{"tool":"get-tiny-image"}`, `{"action":"call","tool":"get-tiny-image"}`},
		{`Use {braces} wisely: {"action": "call", "tool": "echo", "args": {"message": "{}"}} ok`,
			`{"action":"call","tool":"echo","arguments":{"message":"{}"}}`},
		{`{"action":"call","tool":"echo","arguments":{"big":12345678901234567890}}`,
			`{"action":"call","tool":"echo","arguments":{"big":12345678901234567890}}`},
	} {
		t.Run(tc.text, func(t *testing.T) {
			p, err := client.ExtractProposal(tc.text)
			if err != nil || jsonOf(p) != tc.want {
				t.Errorf("%q:\n got %s %v\nwant %s", tc.text, jsonOf(p), err, tc.want)
			}
		})
	}
	for _, text := range []string{
		"", "I cannot do that.", `{"action":"call"}`, `{"action":"delete","tool":"x"}`, `{"message":"hi"}`,
		`{"name":"echo","arguments":"not json"}`, `{"name":"echo","arguments":[1]}`, `{"action":"call","tool":"echo"`,
	} {
		if p, err := client.ExtractProposal(text); err == nil {
			t.Errorf("%q read as %s", text, jsonOf(p))
		}
	}
	if _, err := client.ExtractProposal(strings.Repeat(`{"a":`, 20000)); err == nil {
		t.Error("a runaway reply read as a call")
	}
}

// FuzzExtractProposal: any text either has no call or gives one that reads
// back the same from its own JSON, so what is shown is what is run.
func FuzzExtractProposal(f *testing.F) {
	for _, seed := range []string{
		`{"action":"call","tool":"echo","arguments":{"message":"hi"}}`,
		"text ```json\n{\"name\":\"a\",\"arguments\":{\"x\":[1,{\"y\":null}]}}\n``` more",
		`{"function":{"name":"f","arguments":"{\"k\":1e400}"}}`,
		`{"action":"done","answer":"\u001b[2J"}`,
		`{{{"tool":"t","parameters":{}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := client.ExtractProposal(text)
		if err != nil {
			return
		}
		if p.Action != client.ActionCall && p.Action != client.ActionDone {
			t.Fatalf("action %q from %q", p.Action, text)
		}
		if p.Action == client.ActionCall && (p.Tool == "" || p.Arguments == nil) {
			t.Fatalf("a call without a tool or arguments from %q: %+v", text, p)
		}
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("the proposal from %q does not encode: %v", text, err)
		}
		again, err := client.ExtractProposal(string(data))
		if err != nil || !reflect.DeepEqual(again, p) {
			t.Fatalf("%s reads back as %+v (%v)", data, again, err)
		}
	})
}
