package mcpschema

import (
	"strings"
	"testing"
)

func TestToolProblems(t *testing.T) {
	for _, c := range []struct {
		tool string
		want string // in the problems; "" means none
	}{
		{`{"name":"ok","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"any":{}},"required":["a"]}}`, ""},
		{`{"name":"nested","inputSchema":{"type":"object","properties":{"a":{"type":"array","items":true}}}}`, ""},
		{`{"name":"t","inputSchema":{"type":"object","properties":{"capabilities":true}}}`, `property "capabilities" is the boolean schema true`},
		{`{"name":"t","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"x":false}}}`, `outputSchema: property "x" is the boolean schema false`},
		{`{"name":"t","inputSchema":{"type":"array"}}`, `the root's type is array`},
		{`{"name":"t","inputSchema":true}`, `the root is a boolean`},
		{`{"name":"t","inputSchema":{"type":"object","required":[1]}}`, `required is an array`},
		{`{"name":"t"}`, `no inputSchema`},
	} {
		t.Run(c.tool, func(t *testing.T) {
			got := strings.Join(ToolProblems([]byte(c.tool)), "; ")
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("%s: problems %q, want %q", c.tool, got, c.want)
			}
		})
	}
}
