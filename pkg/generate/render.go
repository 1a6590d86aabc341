package generate

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// RenderError lists everything that kept a template from rendering: every
// missing variable (by its full path, e.g. tasks[2].commit) and every value
// of the wrong kind.
type RenderError struct {
	Missing  []string
	Problems []string
}

func (e *RenderError) Error() string {
	var parts []string
	if len(e.Missing) > 0 {
		parts = append(parts, "missing variables: "+strings.Join(e.Missing, ", "))
	}
	return strings.Join(append(parts, e.Problems...), "; ")
}

// Rendered is a template's output and the top-level variables it used.
type Rendered struct {
	Content string
	Used    map[string]bool
}

// Render fills the template with vars, which must be JSON-shaped
// (map[string]any, []any, string, json.Number or float64, bool, nil).
// Strict: a variable the template names but vars lacks is an error, in
// #if and #each too (pass false, null or [] to leave a section out).
func (t *Template) Render(vars map[string]any) (Rendered, error) {
	r := &renderer{stack: []frame{{value: vars}}, used: map[string]bool{}, seen: map[string]bool{}}
	r.nodes(t.nodes)
	if len(r.err.Missing)+len(r.err.Problems) > 0 {
		return Rendered{Used: r.used}, &r.err
	}
	return Rendered{Content: r.out.String(), Used: r.used}, nil
}

// frame is one level of context: the root, an #each item or a #with value.
type frame struct {
	value any
	name  string // its path, for messages: "", "tasks[2]", "author"
	data  map[string]any
}

type renderer struct {
	out   strings.Builder
	stack []frame
	used  map[string]bool
	err   RenderError
	seen  map[string]bool
}

func (r *renderer) nodes(ns []node) {
	for _, n := range ns {
		switch n := n.(type) {
		case *textNode:
			r.out.WriteString(n.text)
		case *varNode:
			if v, name, ok := r.lookup(n.path); ok {
				r.out.WriteString(format(v))
			} else {
				r.missing(name)
			}
		case *blockNode:
			r.block(n)
		}
	}
}

func (r *renderer) block(b *blockNode) {
	v, name, ok := r.lookup(b.path)
	if !ok {
		r.missing(name)
		return
	}
	switch b.helper {
	case "if":
		r.branch(truthy(v), b)
	case "unless":
		r.branch(!truthy(v), b)
	case "with":
		if !truthy(v) {
			r.nodes(b.inverse)
			return
		}
		r.stack = append(r.stack, frame{value: v, name: name})
		r.nodes(b.body)
		r.stack = r.stack[:len(r.stack)-1]
	case "each":
		r.each(b, v, name)
	}
}

func (r *renderer) branch(cond bool, b *blockNode) {
	if cond {
		r.nodes(b.body)
	} else {
		r.nodes(b.inverse)
	}
}

// each renders the body once per array item, or per object field in key
// order, and the inverse when there is none.
func (r *renderer) each(b *blockNode, v any, name string) {
	type item struct {
		value any
		name  string
		key   any
	}
	var items []item
	switch v := v.(type) {
	case []any:
		for i, x := range v {
			items = append(items, item{x, fmt.Sprintf("%s[%d]", name, i), i})
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			items = append(items, item{v[k], join(name, k), k})
		}
	case nil:
	default:
		r.problem(fmt.Sprintf("%s is %s, and #each needs a list or an object", name, kind(v)))
		return
	}
	if len(items) == 0 {
		r.nodes(b.inverse)
		return
	}
	for i, it := range items {
		data := map[string]any{"index": i, "first": i == 0, "last": i == len(items)-1}
		if k, ok := it.key.(string); ok {
			data["key"] = k
		}
		r.stack = append(r.stack, frame{value: it.value, name: it.name, data: data})
		r.nodes(b.body)
		r.stack = r.stack[:len(r.stack)-1]
	}
}

// lookup resolves a path; when it fails it returns the full name of what
// is missing.
func (r *renderer) lookup(p path) (any, string, bool) {
	if p.data != "" {
		for i := len(r.stack) - 1; i >= 0; i-- {
			if v, ok := r.stack[i].data[p.data]; ok {
				return v, "@" + p.data, true
			}
		}
		return nil, "@" + p.data + " (outside #each)", false
	}
	base := len(r.stack) - 1 - p.up
	if p.root {
		base = 0
	}
	if base < 0 {
		return nil, p.raw + " (above the top level)", false
	}
	f := r.stack[base]
	if base == 0 && len(p.parts) > 0 {
		r.used[p.parts[0]] = true
	}
	v, name := f.value, f.name
	for _, part := range p.parts {
		name = join(name, part)
		switch c := v.(type) {
		case map[string]any:
			x, ok := c[part]
			if !ok {
				return nil, name, false
			}
			v = x
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(c) {
				return nil, name, false
			}
			v = c[i]
		default:
			return nil, name, false
		}
	}
	return v, name, true
}

func (r *renderer) missing(name string) {
	if !r.seen[name] {
		r.seen[name] = true
		r.err.Missing = append(r.err.Missing, name)
	}
}

func (r *renderer) problem(msg string) {
	if !r.seen[msg] {
		r.seen[msg] = true
		r.err.Problems = append(r.err.Problems, msg)
	}
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// format writes a value as text: strings as they are, numbers as written,
// lists joined with ", ", objects as JSON, null as nothing.
func format(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number:
		return v.String()
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = format(x)
		}
		return strings.Join(parts, ", ")
	case map[string]any:
		b, _ := json.Marshal(v)
		return string(b)
	}
	return fmt.Sprint(v)
}

// truthy is Handlebars' truth: false, null, "", 0 and [] are false.
func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case string:
		return v != ""
	case json.Number:
		f, err := v.Float64()
		return err != nil || f != 0
	case float64:
		return v != 0
	case int:
		return v != 0
	case []any:
		return len(v) > 0
	}
	return true
}

func kind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64, int:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
