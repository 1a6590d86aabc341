package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// MarshalJSON encodes the answer as encoding/json would, byte for byte, but
// without reflection for what a big call is made of: thousands of results,
// each with its matches. Through reflection, encoding was the largest part of
// a pattern search over a big tree; the rarer parts of a result (frontmatter
// data, symbols, dependencies) still go through encoding/json.
func (d Data) MarshalJSON() ([]byte, error) { return d.CompactJSON() }

// CompactJSON is MarshalJSON without encoding/json's re-scan of the result
// (see jsonio.CompactMarshaler).
func (d Data) CompactJSON() ([]byte, error) { return d.AppendJSON(nil) }

// AppendJSON appends the encoded answer to b (see envelope.Appender).
func (d Data) AppendJSON(b []byte) ([]byte, error) {
	names := slices.Sorted(maps.Keys(d.Results))
	// The rest of a part is in other buffers: sized with it, b would
	// hold it twice.
	parts := encodingParts(len(names))
	b = slices.Grow(b, 1024+d.sizeHint(names[:len(names)/parts]))
	b = append(b, `{"task_type":`...)
	b = appendString(b, d.TaskType)
	b = append(b, `,"results":{`...)
	b, err := d.appendResults(b, names, parts)
	if err != nil {
		return nil, err
	}
	b = append(b, `},"stats":`...)
	if b, err = appendMarshal(b, d.Stats); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// encodedPerPart is the fewest results worth encoding on a CPU of their
// own: below it, starting and joining the part costs more than it saves.
const encodedPerPart = 2000

func encodingParts(results int) int {
	return max(1, min(runtime.GOMAXPROCS(0), results/encodedPerPart))
}

// appendResults appends the named results, comma-separated, in parts
// encoded in parallel: the first into b, the others each into a buffer of
// its own, appended after it. For a big search, encoding is a part of the
// time no worker shares otherwise.
func (d Data) appendResults(b []byte, names []string, parts int) ([]byte, error) {
	bounds := func(p int) []string { return names[p*len(names)/parts : (p+1)*len(names)/parts] }
	rest := make([][]byte, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := 1; p < parts; p++ {
		wg.Go(func() {
			part := bounds(p)
			rest[p], errs[p] = d.appendNamed(make([]byte, 0, d.sizeHint(part)), part)
		})
	}
	b, errs[0] = d.appendNamed(b, bounds(0))
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, part := range rest[1:] {
		b = append(append(b, ','), part...)
	}
	return b, nil
}

// appendNamed appends "name":result for each name, comma-separated.
func (d Data) appendNamed(b []byte, names []string) ([]byte, error) {
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, name)
		b = append(b, ':')
		var err error
		if b, err = d.Results[name].appendJSON(b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// sizeHint is about the encoded size of the named results' names and
// matches, so a buffer is allocated once rather than grown and copied a
// dozen times.
func (d Data) sizeHint(names []string) int {
	n := 0
	for _, name := range names {
		n += len(name) + 64
		for _, m := range d.Results[name].Matches {
			n += len(m.Pattern) + len(m.Match) + len(m.Text) + 64
		}
	}
	return n
}

// appendJSON appends r as encoding/json encodes FileResult: fields in
// declaration order, empty ones omitted, Symbols' fields promoted.
func (r FileResult) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"found":`...)
	b = strconv.AppendBool(b, r.Found)
	field := func(name string) { b = append(append(append(b, `,"`...), name...), `":`...) }
	if r.Language != "" {
		field("language")
		b = appendString(b, r.Language)
	}
	if r.Format != "" {
		field("format")
		b = appendString(b, r.Format)
	}
	if r.Data != nil {
		field("data")
		if b, err = appendMarshal(b, r.Data); err != nil {
			return nil, err
		}
	}
	if len(r.Lines) > 0 {
		field("lines")
		if b, err = appendMarshal(b, r.Lines); err != nil {
			return nil, err
		}
	}
	if len(r.LineNumbers) > 0 {
		field("line_numbers")
		b = append(b, '[')
		for i, n := range r.LineNumbers {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(n), 10)
		}
		b = append(b, ']')
	}
	if len(r.Matches) > 0 {
		field("matches")
		b = append(b, '[')
		for i, m := range r.Matches {
			if i > 0 {
				b = append(b, ',')
			}
			b = m.appendJSON(b)
		}
		b = append(b, ']')
	}
	if r.Truncated {
		field("truncated")
		b = append(b, "true"...)
	}
	if r.Symbols != nil {
		// Promoted fields: Symbols' own object, its { turned into a comma
		// and its } dropped; nothing when every field was omitted.
		start := len(b)
		if b, err = appendMarshal(b, r.Symbols); err != nil {
			return nil, err
		}
		if len(b)-start > len("{}") {
			b[start] = ','
			b = b[:len(b)-1]
		} else {
			b = b[:start]
		}
	}
	if r.Dependencies != nil {
		field("dependencies")
		if b, err = appendMarshal(b, r.Dependencies); err != nil {
			return nil, err
		}
	}
	if r.Error != "" {
		field("error")
		b = appendString(b, r.Error)
	}
	if r.ErrorCategory != "" {
		field("error_category")
		b = appendString(b, r.ErrorCategory)
	}
	if r.Cached {
		field("cached")
		b = append(b, "true"...)
	}
	return append(b, '}'), nil
}

func (m Match) appendJSON(b []byte) []byte {
	b = append(b, `{"pattern":`...)
	b = appendString(b, m.Pattern)
	b = append(b, `,"line":`...)
	b = strconv.AppendInt(b, int64(m.Line), 10)
	b = append(b, `,"column":`...)
	b = strconv.AppendInt(b, int64(m.Column), 10)
	b = append(b, `,"match":`...)
	b = appendString(b, m.Match)
	b = append(b, `,"text":`...)
	b = appendString(b, m.Text)
	return append(b, '}')
}

// appendMarshal appends v encoded by encoding/json, without HTML escaping
// like the rest (see appendString).
func appendMarshal(b []byte, v any) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// appendString appends s as a JSON string exactly as encoding/json writes
// it without HTML escaping (which, when wanted, encoding/json applies to
// a Marshaler's output itself): invalid UTF-8 becomes U+FFFD, and U+2028
// and U+2029 are escaped.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, `\b`...)
			case '\f':
				b = append(b, `\f`...)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			case '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}
