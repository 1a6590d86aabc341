// Package jsonio writes lm's results: one JSON document (pretty on a
// terminal, compact otherwise) or JSON Lines, optionally filtered through a
// jq program (gojq) with jq's -r raw-string output. On a terminal what it
// would interpret rather than show is escaped.
package jsonio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
	"unicode/utf8"

	"github.com/itchyny/gojq"
	"golang.org/x/sys/unix"

	"lmtool.dev/lm/pkg/table"
)

// jqTimeout bounds one filter run: jq programs can loop forever.
const jqTimeout = 10 * time.Second

// Printer writes values to an output stream.
type Printer struct {
	w        io.Writer
	terminal bool
	raw      bool
	code     *gojq.Code
}

// ErrBadFilter marks a jq program that does not compile (a usage error).
var ErrBadFilter = errors.New("invalid jq filter")

// NewPrinter returns a printer for w. jq is a jq program ("" for none); raw
// prints string results without quotes; terminal says w is a person's
// terminal: documents are indented, and what the terminal would interpret
// rather than show is escaped.
func NewPrinter(w io.Writer, jq string, raw, terminal bool) (*Printer, error) {
	p := &Printer{w: w, terminal: terminal, raw: raw}
	if jq == "" {
		return p, nil
	}
	q, err := gojq.Parse(jq)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFilter, err)
	}
	// No environment loader: $ENV stays empty, so a filter cannot read the
	// process environment.
	p.code, err = gojq.Compile(q)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFilter, err)
	}
	return p, nil
}

// IsTerminal reports whether f is a terminal. A character device is not
// enough: /dev/null is one too, and a command run with </dev/null or
// >/dev/null must not be taken for a person at a terminal.
func IsTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(file.Fd()), unix.TCGETS)
	return err == nil
}

// Document prints v as one JSON document (or the filter's outputs).
func (p *Printer) Document(ctx context.Context, v any) error {
	return p.print(ctx, v, p.terminal)
}

// Line prints v as one JSON Lines record (or the filter's outputs, one a line).
func (p *Printer) Line(ctx context.Context, v any) error {
	return p.print(ctx, v, false)
}

func (p *Printer) print(ctx context.Context, v any, pretty bool) error {
	data, err := Marshal(v)
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	if p.code == nil {
		return p.write(data, pretty)
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return fmt.Errorf("decode output for jq: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, jqTimeout)
	defer cancel()
	iter := p.code.RunWithContext(ctx, generic)
	for {
		r, ok := iter.Next()
		if !ok {
			return nil
		}
		if err, isErr := r.(error); isErr {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				return nil
			}
			return fmt.Errorf("jq: %w", err)
		}
		if s, isStr := r.(string); isStr && p.raw {
			if p.terminal {
				// A string can hold anything the result held, such as a
				// job's output; piped it stays exact for the program reading.
				s = table.Printable(s)
			}
			if _, err := io.WriteString(p.w, s+"\n"); err != nil {
				return err
			}
			continue
		}
		out, err := gojq.Marshal(r)
		if err != nil {
			return fmt.Errorf("jq: %w", err)
		}
		if err := p.write(out, pretty); err != nil {
			return err
		}
	}
}

func (p *Printer) write(data []byte, pretty bool) error {
	if pretty {
		var buf bytes.Buffer
		if json.Indent(&buf, data, "", "  ") == nil {
			data = buf.Bytes()
		}
	}
	if p.terminal {
		data = escapeForTerminal(data)
	}
	data = append(data, '\n')
	_, err := p.w.Write(data)
	return err
}

// escapeForTerminal writes as \u escapes what encoding/json and gojq leave
// raw in strings but a terminal would act on: DEL, the C1 controls (U+009B
// starts a control sequence on many terminals) and bidirectional controls;
// a byte that is not UTF-8 becomes \ufffd, as a decoder reads it. Outside
// strings JSON is ASCII below DEL, so every such character is inside a
// string, where its escape is the same value: the terminal and a program
// reading the piped JSON see one document. data is returned as is when
// nothing needs escaping.
func escapeForTerminal(data []byte) []byte {
	var escaped bytes.Buffer
	done := 0 // data[:done] is in escaped
	for i := 0; i < len(data); {
		if data[i] < 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 || table.Interpreted(r) {
			escaped.Write(data[done:i])
			fmt.Fprintf(&escaped, `\u%04x`, r)
			done = i + size
		}
		i += size
	}
	if done == 0 {
		return data
	}
	escaped.Write(data[done:])
	return escaped.Bytes()
}

// CompactMarshaler is implemented by types that encode themselves as
// compact, valid JSON without HTML escaping, as [Marshal] would.
type CompactMarshaler interface {
	CompactJSON() ([]byte, error)
}

// Marshal encodes v as compact JSON without escaping <, > and &, which
// instruction texts and code are full of.
//
// A value with a CompactJSON method is trusted to encode itself as compact,
// valid JSON and is not re-scanned: encoding/json checks and compacts the
// output of every MarshalJSON, which for large results (thousands of
// matches, wrapped in an envelope) cost more than encoding them.
func Marshal(v any) ([]byte, error) {
	if c, ok := v.(CompactMarshaler); ok {
		return c.CompactJSON()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
