package extract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"
)

// Block is a frontmatter block found at the start of a file.
type Block struct {
	Format string // yaml, toml or json
	Body   []byte // the block without its delimiters
	Line   int    // the 1-based line of Body's first line in the file
}

var bom = []byte("\xef\xbb\xbf")

// SplitFrontmatter finds the frontmatter block at the start of data: YAML
// between --- lines (closed by --- or ...), TOML between +++ lines, or a JSON
// object starting with {. A leading BOM, blank lines and CRLF line ends are
// tolerated. No block is (nil, nil); a block that never ends is an error.
func SplitFrontmatter(data []byte) (*Block, error) {
	data = bytes.TrimPrefix(data, bom)
	line := 1
	for {
		end := bytes.IndexByte(data, '\n')
		if end < 0 || len(bytes.TrimSpace(data[:end])) != 0 {
			break
		}
		data, line = data[end+1:], line+1
	}
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	switch strings.TrimRight(string(first), " \t\r") {
	case "---":
		return delimited(rest, line+1, "yaml", "---", "...")
	case "+++":
		return delimited(rest, line+1, "toml", "+++")
	}
	if len(data) > 0 && data[0] == '{' {
		end, err := jsonObjectEnd(data)
		if err != nil {
			return nil, err
		}
		return &Block{Format: "json", Body: data[:end], Line: line}, nil
	}
	return nil, nil
}

// delimited reads lines up to a closing delimiter line.
func delimited(data []byte, line int, format string, closers ...string) (*Block, error) {
	for off := 0; off <= len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		next := off + end + 1
		if end < 0 {
			end, next = len(data)-off, len(data)+1
		}
		text := strings.TrimRight(string(data[off:off+end]), " \t\r")
		for _, c := range closers {
			if text == c {
				return &Block{Format: format, Body: data[:off], Line: line}, nil
			}
		}
		off = next
	}
	return nil, fmt.Errorf("unterminated %s frontmatter: no closing %s line", format, closers[0])
}

// jsonObjectEnd returns the length of the JSON object at the start of data,
// minding strings and escapes.
func jsonObjectEnd(data []byte) (int, error) {
	depth, inString, escaped := 0, false, false
	for i, c := range data {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("unterminated json frontmatter: no closing }")
}

// Field is one top-level frontmatter field.
type Field struct {
	Value any
	Line  int
}

// ParseFrontmatter decodes a block's top-level fields with their lines.
func ParseFrontmatter(b *Block) (map[string]Field, error) {
	var fields map[string]Field
	var err error
	switch b.Format {
	case "yaml":
		fields, err = yamlFields(b.Body)
	case "toml":
		fields, err = tomlFields(b.Body)
	default:
		fields, err = jsonFields(b.Body)
	}
	if err != nil {
		return nil, fmt.Errorf("%s frontmatter: %w", b.Format, err)
	}
	for k, f := range fields {
		f.Line += b.Line - 1
		fields[k] = f
	}
	return fields, nil
}

func yamlFields(body []byte) (map[string]Field, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	fields := map[string]Field{}
	if len(doc.Content) == 0 {
		return fields, nil // an empty block
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("want a mapping of fields, got a %s", kindName(m.Kind))
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		var v any
		if err := m.Content[i+1].Decode(&v); err != nil {
			return nil, fmt.Errorf("field %q: %w", m.Content[i].Value, err)
		}
		fields[m.Content[i].Value] = Field{Value: v, Line: m.Content[i].Line}
	}
	return fields, nil
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "scalar"
	}
	return "node"
}

func tomlFields(body []byte) (map[string]Field, error) {
	var values map[string]any
	if err := toml.Unmarshal(body, &values); err != nil {
		return nil, err
	}
	// go-toml gives no positions: find each top-level key's line (a key
	// before any table header, or the table's header).
	lines := map[string]int{}
	inTable := false
	for n, raw := range strings.Split(string(body), "\n") {
		text := strings.TrimSpace(raw)
		if strings.HasPrefix(text, "[") {
			name := strings.Trim(text, "[] \t\r")
			name, _, _ = strings.Cut(name, ".")
			inTable = true
			if _, seen := lines[unquote(name)]; !seen {
				lines[unquote(name)] = n + 1
			}
			continue
		}
		if inTable || text == "" || text[0] == '#' {
			continue
		}
		if key, _, ok := strings.Cut(text, "="); ok {
			key, _, _ = strings.Cut(strings.TrimSpace(key), ".")
			if _, seen := lines[unquote(key)]; !seen {
				lines[unquote(key)] = n + 1
			}
		}
	}
	fields := map[string]Field{}
	for k, v := range values {
		fields[k] = Field{Value: v, Line: lines[k]}
	}
	return fields, nil
}

func unquote(key string) string {
	key = strings.TrimSpace(key)
	if len(key) >= 2 && (key[0] == '"' || key[0] == '\'') && key[len(key)-1] == key[0] {
		return key[1 : len(key)-1]
	}
	return key
}

func jsonFields(body []byte) (map[string]Field, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // the opening {
		return nil, err
	}
	fields := map[string]Field{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		line := 1 + bytes.Count(body[:dec.InputOffset()], []byte("\n"))
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("field %q: %w", key, err)
		}
		fields[key] = Field{Value: v, Line: line}
	}
	return fields, nil
}

// frontmatterResult answers the frontmatter task for one file's content.
func frontmatterResult(content []byte, want []string) FileResult {
	b, err := SplitFrontmatter(content)
	if err != nil {
		return failed("invalid_frontmatter", err)
	}
	if b == nil {
		return FileResult{Found: false}
	}
	fields, err := ParseFrontmatter(b)
	if err != nil {
		return failed("invalid_frontmatter", err)
	}
	data := map[string]any{}
	r := FileResult{Found: true, Format: b.Format, Data: data, Lines: map[string]int{}}
	if len(want) == 0 {
		for k := range fields {
			want = append(want, k)
		}
		sort.Strings(want)
	}
	for _, k := range want {
		f, ok := fields[k]
		data[k] = f.Value // a missing field is null
		if ok {
			r.Lines[k] = f.Line
			r.LineNumbers = append(r.LineNumbers, f.Line)
		}
	}
	sort.Ints(r.LineNumbers)
	return r
}
