package client_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mark3labs/mcp-go/mcp"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers/client"
)

var sumTool = mcp.NewToolWithRawSchema("sum", "adds", json.RawMessage(`{
	"type": "object",
	"properties": {
		"a": {"type": "number", "description": "first"},
		"n": {"type": "integer"},
		"flag": {"type": "boolean"},
		"tags": {"type": "array", "items": {"type": "string"}},
		"mode": {"type": "string", "enum": ["fast", "slow"]},
		"any": {}
	},
	"required": ["a"],
	"additionalProperties": false
}`))

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		args map[string]any
		want string // "" = valid
	}{
		{map[string]any{"a": 1.5}, ""},
		{map[string]any{"a": 1, "n": 2, "flag": true, "tags": []any{"x"}, "mode": "fast", "any": map[string]any{}}, ""},
		{map[string]any{}, `missing required argument "a" (number: first)`},
		{map[string]any{"a": "x"}, `argument "a" must be number, got string`},
		{map[string]any{"a": 1, "n": 1.5}, `argument "n" must be integer, got number`},
		{map[string]any{"a": 1, "zzz": 1}, `unknown argument "zzz"`},
		{map[string]any{"a": 1, "mode": "medium"}, `invalid arguments`},
		{map[string]any{"a": 1, "tags": []any{1}}, `invalid arguments`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			err := client.Validate(sumTool, tc.args)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%v: %v", tc.args, err)
			case tc.want != "" && (err == nil || op.KindOf(err) != op.KindInvalid || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
			}
		})
	}
}

func schema(t testing.TB) *jsonschema.Schema {
	s := &jsonschema.Schema{}
	if err := json.Unmarshal(sumTool.RawInputSchema, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseArg(t *testing.T) {
	s := schema(t)
	for kv, want := range map[string]string{
		"a=1.5":          `"a":1.5`,
		"n=3":            `"n":3`,
		"flag=true":      `"flag":true`,
		`tags=["x"]`:     `"tags":["x"]`,
		"mode=a=b":       `"mode":"a=b"`,
		`any={"k":1}`:    `"any":{"k":1}`,
		"any=plain":      `"any":"plain"`,
		"other=5":        `"other":5`,
		"n=three":        `error: --arg n: "three" is not a whole number`,
		"tags=x":         `error: --arg tags: "x" is not a JSON array`,
		"novalue":        `error: --arg "novalue" is not NAME=VALUE`,
		"=x":             `error: --arg "=x" is not NAME=VALUE`,
		"flag=sometimes": `error: --arg flag: "sometimes" is not true or false`,
	} {
		k, v, err := client.ParseArg(s, kv)
		got := ""
		if err != nil {
			got = "error: " + err.Error()
		} else {
			data, _ := json.Marshal(map[string]any{k: v})
			got = string(data)
		}
		if !strings.Contains(got, want) {
			t.Errorf("%s: got %s, want %s", kv, got, want)
		}
	}
}

func TestParseHeader(t *testing.T) {
	for in, want := range map[string]string{
		"X-Api-Key: abc":            "X-Api-Key=abc",
		"A:b:c":                     "A=b:c",
		"Authorization:  Bearer x ": "Authorization=Bearer x",
		"novalue":                   "error",
		": x":                       "error",
		"Bad Name: x":               "error",
		"X: a\r\nY: b":              "error",
	} {
		k, v, err := client.ParseHeader(in)
		got := k + "=" + v
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestParseSequence(t *testing.T) {
	for in, want := range map[string]string{
		`{"steps":[{"tool":"a"},{"tool":"b","jq":{"x":".step1"}}]}`: "",
		`{"steps":[]}`:             "has no steps",
		`{"steps":[{"name":"x"}]}`: "step 1 (x) has no tool",
		`{"steps":[{"tool":"a","name":"s"},{"tool":"b","name":"s"}]}`: `the name "s" is used twice`,
		`{"steps":[{"tool":"a","jq":{"x":".["}}]}`:                    `jq for "x"`,
		`{"steps":[{"tool":"a","extra":1}]}`:                          "not valid",
		`[]`:                                                          "not valid",
	} {
		_, err := client.ParseSequence([]byte(in))
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
}

func FuzzParseSequence(f *testing.F) {
	f.Add([]byte(`{"steps":[{"name":"a","tool":"t","arguments":{"x":1},"jq":{"y":".a[0].text"}}]}`))
	f.Add([]byte(`{"steps":[{"tool":"t","jq":{"y":"def f: f; f"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		seq, err := client.ParseSequence(data)
		if err == nil && len(seq.Steps) == 0 {
			t.Fatal("a sequence without steps was accepted")
		}
		if err != nil && op.KindOf(err) != op.KindInvalid {
			t.Fatalf("kind %d: %v", op.KindOf(err), err)
		}
	})
}

func FuzzParseArg(f *testing.F) {
	s := schema(f)
	for _, seed := range []string{"a=1", "tags=[1,2]", "any={", "n=-0", "flag=T", "=", "x"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, kv string) {
		k, v, err := client.ParseArg(s, kv)
		if err != nil {
			return
		}
		if k == "" || !strings.HasPrefix(kv, k+"=") {
			t.Fatalf("%q gave the name %q", kv, k)
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("%q gave a value JSON cannot encode: %v", kv, err)
		}
	})
}

func FuzzParseHeader(f *testing.F) {
	for _, seed := range []string{"X-A: b", "a:b", ":", "A\n: b", "A: b\r\nC: d"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		k, v, err := client.ParseHeader(in)
		if err != nil {
			return
		}
		if k == "" || strings.ContainsAny(k+v, "\r\n\x00") || strings.ContainsAny(k, " :") {
			t.Fatalf("%q parsed to an unsafe header %q: %q", in, k, v)
		}
	})
}
