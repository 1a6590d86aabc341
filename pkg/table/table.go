// Package table renders an operation's result for a person at a terminal:
// aligned columns under a few summary lines, times relative to now, ids cut
// to their shortest unique prefix and, where the terminal allows, colour.
// The same declaration also renders as tab-separated values for cut and
// awk. An output type declares its table by implementing [Tabler]; the
// JSON it encodes to is untouched.
package table

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"
)

// Tabler is implemented by outputs that have a table for people.
type Tabler interface {
	Table() Table
}

// Table is a result as people read it.
type Table struct {
	// Summary lines come first, one "name  value" a line.
	Summary []Field
	// Columns name the rows' cells; a table without columns is a summary.
	Columns []string
	Rows    [][]any
	// Empty is said instead of the header when there are no rows
	// ("no instructions").
	Empty string
}

// Field is one summary line.
type Field struct {
	Name  string
	Value any
}

// ID is an identifier. A table shows the shortest prefix that tells it from
// every other id of its column, as git abbreviates commits; TSV shows it
// whole.
type ID string

// State is a status word, coloured by what it means on a colour terminal.
type State string

// Cell values may also be strings (a table shows the first line, cut to
// a readable width), numbers, booleans, time.Time and *time.Time (relative
// in a table, RFC 3339 in TSV), time.Duration, pointers to any of these and
// nil ("-").

// Options are how a table is drawn.
type Options struct {
	Now    time.Time
	Colour bool
}

// TSVOptions are how tab-separated values are written.
type TSVOptions struct {
	// Terminal is set when a person's terminal shows them: what it would
	// interpret (escape sequences a file, branch or server's name may
	// hold) is escaped too, as in a table. Piped, values stay exact.
	Terminal bool
}

// maxCell is the widest a free-text cell is drawn, in characters.
const maxCell = 60

// minID is the fewest characters an abbreviated id keeps after its kind
// ("j_" of a job).
const minID = 8

// maxPrefix is the longest prefix, after its kind, an id is shown by before
// its tail is shown instead; minTail is the fewest characters of a tail.
const (
	maxPrefix = 12
	minTail   = 4
)

// Write draws t as aligned columns.
func Write(w io.Writer, t Table, o Options) error {
	var b strings.Builder
	nameWidth := 0
	for _, f := range t.Summary {
		nameWidth = max(nameWidth, utf8.RuneCountInString(f.Name))
	}
	for _, f := range t.Summary {
		value := o.cell(f.Value, nil)
		if s, ok := deref(f.Value).(string); ok {
			value = printableLine(strings.TrimSpace(s)) // a summary line has room for a whole path or message
		}
		fmt.Fprintf(&b, "%s  %s\n", pad(f.Name+":", nameWidth+1), value)
	}
	if len(t.Columns) > 0 {
		if len(t.Summary) > 0 {
			b.WriteString("\n")
		}
		if len(t.Rows) == 0 {
			if t.Empty != "" {
				b.WriteString(t.Empty + "\n")
			}
		} else {
			o.grid(&b, t)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// grid draws the header and rows, each column as wide as its widest cell.
func (o Options) grid(b *strings.Builder, t Table) {
	abbrev := make([]map[ID]string, len(t.Columns))
	for c := range t.Columns {
		abbrev[c] = shortIDs(t.Rows, c)
	}
	cells := make([][]string, len(t.Rows))
	plain := make([][]string, len(t.Rows))
	widths := make([]int, len(t.Columns))
	for c, name := range t.Columns {
		widths[c] = utf8.RuneCountInString(name)
	}
	for r, row := range t.Rows {
		cells[r] = make([]string, len(t.Columns))
		plain[r] = make([]string, len(t.Columns))
		for c := range t.Columns {
			var v any
			if c < len(row) {
				v = row[c]
			}
			plain[r][c] = Options{Now: o.Now}.cell(v, abbrev[c])
			cells[r][c] = o.cell(v, abbrev[c])
			widths[c] = max(widths[c], utf8.RuneCountInString(plain[r][c]))
		}
	}
	header := make([]string, len(t.Columns))
	for c, name := range t.Columns {
		header[c] = o.bold(name)
	}
	line(b, header, t.Columns, widths)
	for r := range cells {
		line(b, cells[r], plain[r], widths)
	}
}

// line writes one row, padding by the plain text's width so colour codes
// do not skew the columns; the last column is not padded.
func line(b *strings.Builder, cells, plain []string, widths []int) {
	for c, cell := range cells {
		if c > 0 {
			if trailingEmpty(plain[c:]) {
				break
			}
			b.WriteString("  ")
		}
		b.WriteString(cell)
		if c < len(cells)-1 && !trailingEmpty(plain[c+1:]) {
			b.WriteString(strings.Repeat(" ", widths[c]-utf8.RuneCountInString(plain[c])))
		}
	}
	b.WriteString("\n")
}

// trailingEmpty reports whether every cell is empty, so a row ends
// without padding.
func trailingEmpty(cells []string) bool {
	for _, c := range cells {
		if c != "" {
			return false
		}
	}
	return true
}

// WriteTSV writes t's rows as tab-separated values under a header line, or
// its summary as name/value pairs when it has no columns. Values are whole:
// full ids, RFC 3339 times, text with tabs, newlines and backslashes
// escaped.
func WriteTSV(w io.Writer, t Table, o TSVOptions) error {
	cell := tsvValue
	if o.Terminal {
		// After the backslashes are escaped, so a name that spells
		// "\u001b" stays apart from one that holds ESC.
		cell = func(v any) string { return Printable(tsvValue(v)) }
	}
	var b strings.Builder
	if len(t.Columns) == 0 {
		for _, f := range t.Summary {
			b.WriteString(cell(f.Name) + "\t" + cell(f.Value) + "\n")
		}
	} else {
		cols := make([]string, len(t.Columns))
		for c, name := range t.Columns {
			cols[c] = cell(name)
		}
		b.WriteString(strings.Join(cols, "\t") + "\n")
		for _, row := range t.Rows {
			cells := make([]string, len(t.Columns))
			for c := range t.Columns {
				if c < len(row) {
					cells[c] = cell(row[c])
				}
			}
			b.WriteString(strings.Join(cells, "\t") + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

var tsvEscaper = strings.NewReplacer("\\", "\\\\", "\t", "\\t", "\n", "\\n", "\r", "\\r")

// tsvValue is v as one TSV cell.
func tsvValue(v any) string {
	v = deref(v)
	switch v := v.(type) {
	case nil:
		return ""
	case time.Time:
		if v.IsZero() {
			return ""
		}
		return v.UTC().Format(time.RFC3339)
	case time.Duration:
		return v.String()
	}
	return tsvEscaper.Replace(fmt.Sprint(v))
}

// cell formats one value for a table. Text comes from files, repositories
// and servers: what a terminal would interpret in it is escaped.
func (o Options) cell(v any, abbrev map[ID]string) string {
	v = deref(v)
	switch v := v.(type) {
	case nil:
		return "-"
	case ID:
		if short, ok := abbrev[v]; ok {
			return printableLine(short)
		}
		return printableLine(string(v))
	case State:
		return o.colourState(printableLine(string(v)))
	case string:
		return printableLine(firstLine(v))
	case bool:
		if v {
			return "yes"
		}
		return "no"
	case time.Time:
		if v.IsZero() {
			return "-"
		}
		return Ago(o.Now, v)
	case time.Duration:
		return Duration(v)
	}
	return printableLine(fmt.Sprint(v))
}

// deref follows pointers; a nil pointer is nil.
func deref(v any) any {
	rv := reflect.ValueOf(v)
	for rv.IsValid() && rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() {
		return nil
	}
	return rv.Interface()
}

// firstLine is s's first non-blank line, cut to maxCell characters, with
// an ellipsis saying that something was left out.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	line, rest, more := strings.Cut(s, "\n")
	line = strings.TrimSpace(strings.ReplaceAll(line, "\t", " "))
	if utf8.RuneCountInString(line) > maxCell {
		return string([]rune(line)[:maxCell-1]) + "…"
	}
	if more && strings.TrimSpace(rest) != "" {
		return line + " …"
	}
	return line
}

// shortIDs abbreviates the IDs of column c: each to the shortest prefix of
// at least minID characters that no other id of the column shares. Ids made
// in one burst share their time and much of their random part (ULIDs made
// in one millisecond count up), so where the prefix would run past
// maxPrefix characters the id shows its shortest unique tail instead,
// marked "…" (lm's commands accept a tail, with or without the mark).
func shortIDs(rows [][]any, c int) map[ID]string {
	var ids []string
	for _, row := range rows {
		if c < len(row) {
			if id, ok := deref(row[c]).(ID); ok {
				ids = append(ids, string(id))
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	short := make(map[ID]string, len(ids))
	for _, id := range ids {
		n := min(len(kind(id))+minID, len(id))
		for _, other := range ids {
			if other != id {
				n = max(n, commonPrefix(id, other)+1)
			}
		}
		if n-len(kind(id)) <= maxPrefix {
			short[ID(id)] = id[:min(n, len(id))]
			continue
		}
		m := min(minTail, len(id))
		for _, other := range ids {
			if other != id {
				m = max(m, commonSuffix(id, other)+1)
			}
		}
		short[ID(id)] = "…" + id[len(id)-min(m, len(id)):]
	}
	return short
}

func commonSuffix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return n
}

// kind is an id's type prefix, up to and including its underscore ("j_").
func kind(id string) string {
	if i := strings.IndexByte(id, '_'); i >= 0 && i < 4 {
		return id[:i+1]
	}
	return ""
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func pad(s string, width int) string {
	return s + strings.Repeat(" ", max(0, width-utf8.RuneCountInString(s)))
}

// ANSI styles.
const (
	reset  = "\x1b[0m"
	bold   = "\x1b[1m"
	dim    = "\x1b[2m"
	red    = "\x1b[31m"
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
)

func (o Options) bold(s string) string {
	if !o.Colour {
		return s
	}
	return bold + s + reset
}

// stateColours says what each state word means: going well, in progress or
// waiting, wrong, or over and done with.
var stateColours = map[string]string{
	"up": green, "running": green, "connected": green, "ok": green, "exited": green, "closed": green,
	"pending": yellow, "queued": yellow, "waiting": yellow, "starting": yellow, "stopping": yellow, "idle": yellow,
	"installing": yellow, "restarting": yellow, "degraded": yellow, "half_open": yellow, "cancelled": yellow,
	"failed": red, "down": red, "error": red, "tool_error": red, "open": red,
	"consumed": dim, "stopped": dim, "disabled": dim,
	// git's colours: staged green, not yet staged red
	"staged": green, "added": green, "modified": red, "deleted": red, "untracked": red, "conflicted": red, "unmerged": red,
}

func (o Options) colourState(s string) string {
	c, ok := stateColours[s]
	if !o.Colour || !ok {
		return s
	}
	return c + s + reset
}

// Texter is implemented by results a person reads as plain text rather
// than a table, such as a job's output. status is one line about the
// result for stderr ("j_01J… exited 0 after 3.1s"), "" for none.
type Texter interface {
	Text() (text, status string)
}

// ForPeople reports whether v, or what it points to, has a table or text
// for people.
func ForPeople(v any) bool {
	switch v.(type) {
	case Tabler, Texter:
		return true
	}
	return false
}
