package table

import (
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func TestWriteAlignsColumnsAndShortensCells(t *testing.T) {
	var b strings.Builder
	consumer := "agent-7"
	err := Write(&b, Table{
		Columns: []string{"ID", "STATUS", "AGE", "CONTENT", "CONSUMER"},
		Rows: [][]any{
			{ID("01JAAAAAAAAAAAAAAAAAAAAAAA"), State("pending"), now.Add(-3 * time.Minute), "first line\nsecond line", (*string)(nil)},
			{ID("01JAAAAAAAAAAAAAAAAAAAAAAB"), State("consumed"), now.Add(-2 * time.Hour), strings.Repeat("x", 80), &consumer},
		},
	}, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	want := "" +
		"ID     STATUS    AGE            CONTENT                                                       CONSUMER\n" +
		"…AAAA  pending   3 minutes ago  first line …                                                  -\n" +
		"…AAAB  consumed  2 hours ago    " + strings.Repeat("x", 59) + "…  agent-7\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestShortIDsAreUniquePrefixes(t *testing.T) {
	rows := [][]any{{ID("j_01JAB0000000000000000000AA")}, {ID("j_01JAB0000000000000000000AB")}, {ID("j_01JZZ0000000000000000000AA")}}
	short := shortIDs(rows, 0)
	if got := short["j_01JZZ0000000000000000000AA"]; got != "j_01JZZ000" {
		t.Errorf("a distinct id keeps its kind and %d characters: got %q", minID, got)
	}
	a, b := short["j_01JAB0000000000000000000AA"], short["j_01JAB0000000000000000000AB"]
	if a == b || strings.HasPrefix(string(b), a) || strings.HasPrefix(a, b) {
		t.Errorf("ids made in one burst must stay apart: %q and %q", a, b)
	}
}

func TestWriteSummaryAndEmpty(t *testing.T) {
	var b strings.Builder
	Write(&b, Table{Summary: []Field{{Name: "gateway", Value: "down"}, {Name: "pending", Value: 2}}, Columns: []string{"AGENT"}, Empty: "no agents"}, Options{Now: now})
	want := "gateway:  down\npending:  2\n\nno agents\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestColourOnlyWhenAsked(t *testing.T) {
	tbl := Table{Columns: []string{"STATE"}, Rows: [][]any{{State("failed")}, {State("unheard-of")}}}
	var plain, coloured strings.Builder
	Write(&plain, tbl, Options{Now: now})
	Write(&coloured, tbl, Options{Now: now, Colour: true})
	if strings.Contains(plain.String(), "\x1b[") {
		t.Errorf("colour without being asked: %q", plain.String())
	}
	if !strings.Contains(coloured.String(), red+"failed"+reset) || strings.Contains(coloured.String(), "m"+"unheard-of") {
		t.Errorf("want failed in red and unknown states plain: %q", coloured.String())
	}
}

func TestWriteTSVKeepsValuesWhole(t *testing.T) {
	var b strings.Builder
	WriteTSV(&b, Table{Columns: []string{"ID", "AT", "TEXT"}, Rows: [][]any{{ID("01JAAAAAAAAAAAAAAAAAAAAAAA"), now, "a\tb\nc"}}}, TSVOptions{})
	want := "ID\tAT\tTEXT\n01JAAAAAAAAAAAAAAAAAAAAAAA\t2026-05-01T12:00:00Z\ta\\tb\\nc\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestHumanUnits(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Ago(now, now.Add(-500*time.Millisecond)), "just now"},
		{Ago(now, now.Add(-time.Second)), "1 second ago"},
		{Ago(now, now.Add(-90*time.Minute)), "1 hour ago"},
		{Ago(now, now.Add(49*time.Hour)), "in 2 days"},
		{Ago(now, now.AddDate(-2, 0, 0)), now.AddDate(-2, 0, 0).Local().Format("2006-01-02")},
		{Duration(850 * time.Millisecond), "850ms"},
		{Duration(4260 * time.Millisecond), "4.2s"},
		{Duration(185 * time.Second), "3m05s"},
		{Duration(130 * time.Minute), "2h10m"},
		{Bytes(512), "512 B"},
		{Bytes(4 << 20), "4.0 MiB"},
		{Bytes(1536), "1.5 KiB"},
	} {
		t.Run(c.got, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("got %q, want %q", c.got, c.want)
			}
		})
	}
}

func TestBurstIDsShowTheirTail(t *testing.T) {
	// ULIDs of one millisecond: the same time, a random part counting up.
	rows := [][]any{{ID("01JAB2C3D4E5F6G7H8J9K0M1N2")}, {ID("01JAB2C3D4E5F6G7H8J9K0M1N3")}, {ID("01JZZZZZZZZZZZZZZZZZZZZZZZ")}}
	short := shortIDs(rows, 0)
	for id, want := range map[ID]string{"01JAB2C3D4E5F6G7H8J9K0M1N2": "…M1N2", "01JAB2C3D4E5F6G7H8J9K0M1N3": "…M1N3", "01JZZZZZZZZZZZZZZZZZZZZZZZ": "01JZZZZZ"} {
		if short[id] != want {
			t.Errorf("%s shows as %q, want %q", id, short[id], want)
		}
	}
}

type label string // any other type a cell may hold, printed as fmt.Sprint prints it

// A file, task or server name is text a repository or a server chose: the
// escape sequences in it reach the terminal as visible escapes, never as
// colours, a new window title or a cleared screen. The table's own colour
// stays.
func TestCellsEscapeWhatATerminalWouldInterpret(t *testing.T) {
	hostile := "evil\x1b[31mRED\x1b]0;title\x07\u202e.txt"
	var b strings.Builder
	err := Write(&b, Table{
		Summary: []Field{{"branch", hostile}},
		Columns: []string{"STATE", "PATH", "ID", "SIZE"},
		Rows:    [][]any{{State("modified"), hostile, ID(hostile), label("\x1b[2J")}},
	}, Options{Now: now, Colour: true})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsAny(strings.ReplaceAll(out, "\x1b[", ""), "\x1b\x07\u202e") || strings.Contains(out, "\x1b[31mRED") || strings.Contains(out, "\x1b[2J") {
		t.Errorf("the table passes control characters through: %q", out)
	}
	if !strings.Contains(out, `evil\u001b[31mRED\u001b]0;title\u0007\u202e.txt`) {
		t.Errorf("the escaped name is not shown: %q", out)
	}
	if !strings.Contains(out, "\x1b[") {
		t.Errorf("the table lost its own colour: %q", out)
	}
}

// TSV a person's terminal shows escapes what the terminal would interpret,
// as a table does: a name could otherwise set the clipboard (OSC 52),
// retitle the window, clear the screen or start a C1 CSI. Piped, the same
// values stay exact for the program that reads them.
func TestTSVOnATerminalEscapesWhatItWouldInterpret(t *testing.T) {
	hostile := "a\x1b]52;c;cHduZWQ=\x07\x1b]0;title\x07\x1b[2J\u009b31m\x9b\u202e\\u001b"
	tbl := Table{Columns: []string{"NAME", "SIZE"}, Rows: [][]any{{hostile, label(hostile)}}}
	var tty, piped strings.Builder
	WriteTSV(&tty, tbl, TSVOptions{Terminal: true})
	WriteTSV(&piped, tbl, TSVOptions{})
	shown := `a\u001b]52;c;cHduZWQ=\u0007\u001b]0;title\u0007\u001b[2J\u009b31m\x9b\u202e\\u001b`
	if want := "NAME\tSIZE\n" + shown + "\t" + shown + "\n"; tty.String() != want {
		t.Errorf("on a terminal got\n%q, want\n%q", tty.String(), want)
	}
	exact := strings.ReplaceAll(hostile, `\`, `\\`)
	if want := "NAME\tSIZE\n" + exact + "\t" + exact + "\n"; piped.String() != want {
		t.Errorf("piped got\n%q, want\n%q", piped.String(), want)
	}
}

// A line of a table is lm's: a branch, job error or server name with a
// line break in it shows the break as \n rather than making a summary line
// or a row of its own that lm never wrote.
func TestANameCannotFakeALine(t *testing.T) {
	var b strings.Builder
	err := Write(&b, Table{
		Summary: []Field{{"branch", "main\nahead:  3"}, {"state", State("ok\nfaked:  yes")}},
		Columns: []string{"ID", "STATE", "SIZE"},
		Rows:    [][]any{{ID("j_1\nj_2"), State("done\r\nfailed"), label("1\n2")}},
	}, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	want := "branch:  main\\nahead:  3\n" +
		"state:   ok\\nfaked:  yes\n" +
		"\n" +
		"ID        STATE               SIZE\n" +
		"j_1\\nj_2  done\\u000d\\nfailed  1\\n2\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
