package gitx

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Porcelain is a parsed `git status --porcelain=v2 -z --branch` report.
type Porcelain struct {
	Branch  Branch
	Entries []Entry
}

// Branch is the report's branch headers.
type Branch struct {
	OID      string // commit id, or "(initial)" in an empty repository
	Head     string // branch name, or "(detached)"
	Upstream string
	Ahead    int
	Behind   int
	HasAB    bool // the upstream exists, so Ahead and Behind are meaningful
}

// Entry is one changed, unmerged, untracked or ignored path.
type Entry struct {
	Kind      byte   // '1' ordinary, '2' renamed or copied, 'u' unmerged, '?' untracked, '!' ignored
	Index     byte   // the X of XY: the staged change, '.' when none
	Worktree  byte   // the Y of XY: the unstaged change, '.' when none
	Submodule string // "N..." for a plain file, else "S<c><m><u>"
	Score     string // for Kind '2': R<n> or C<n>
	Path      string // exactly as git printed it (with -z: unquoted bytes)
	OrigPath  string // for Kind '2': the source path
}

// ParsePorcelain parses a -z porcelain v2 report. Records are NUL-terminated;
// a type-2 record carries a second NUL-terminated path. Fixed fields are
// split on their spaces only, so a path keeps every byte, spaces included.
func ParsePorcelain(data []byte) (*Porcelain, error) {
	p := &Porcelain{}
	for len(data) > 0 {
		end := bytes.IndexByte(data, 0)
		if end < 0 {
			return nil, fmt.Errorf("porcelain: record without its NUL terminator: %q", truncate(data))
		}
		rec := string(data[:end])
		data = data[end+1:]
		if rec == "" {
			return nil, fmt.Errorf("porcelain: empty record")
		}
		switch rec[0] {
		case '#':
			p.Branch.header(rec)
		case '1', 'u':
			nfields := 8 // 1 XY sub mH mI mW hH hI
			if rec[0] == 'u' {
				nfields = 10 // u XY sub m1 m2 m3 mW h1 h2 h3
			}
			e, err := fixedEntry(rec, nfields)
			if err != nil {
				return nil, err
			}
			p.Entries = append(p.Entries, e)
		case '2':
			e, err := fixedEntry(rec, 9) // 2 XY sub mH mI mW hH hI Xscore
			if err != nil {
				return nil, err
			}
			orig := bytes.IndexByte(data, 0)
			if orig < 0 {
				return nil, fmt.Errorf("porcelain: rename of %q lacks its original path", e.Path)
			}
			e.OrigPath = string(data[:orig])
			data = data[orig+1:]
			p.Entries = append(p.Entries, e)
		case '?', '!':
			if len(rec) < 3 || rec[1] != ' ' {
				return nil, fmt.Errorf("porcelain: malformed record %q", truncate([]byte(rec)))
			}
			p.Entries = append(p.Entries, Entry{Kind: rec[0], Path: rec[2:], Index: '.', Worktree: '.'})
		default:
			return nil, fmt.Errorf("porcelain: unknown record type %q", rec[0])
		}
	}
	return p, nil
}

// fixedEntry splits nfields space-separated fields off rec; the rest is the
// path, taken whole.
func fixedEntry(rec string, nfields int) (Entry, error) {
	fields := strings.SplitN(rec, " ", nfields+1)
	if len(fields) != nfields+1 || len(fields[1]) != 2 || fields[nfields] == "" {
		return Entry{}, fmt.Errorf("porcelain: malformed record %q", truncate([]byte(rec)))
	}
	e := Entry{Kind: rec[0], Index: fields[1][0], Worktree: fields[1][1], Submodule: fields[2], Path: fields[nfields]}
	if rec[0] == '2' {
		e.Score = fields[8]
	}
	return e, nil
}

// header reads a branch header; unknown headers are ignored, as git's
// documentation asks of parsers.
func (b *Branch) header(rec string) {
	key, value, _ := strings.Cut(strings.TrimPrefix(rec, "# "), " ")
	switch key {
	case "branch.oid":
		b.OID = value
	case "branch.head":
		b.Head = value
	case "branch.upstream":
		b.Upstream = value
	case "branch.ab":
		a, bh, ok := strings.Cut(value, " ")
		ahead, err1 := strconv.Atoi(strings.TrimPrefix(a, "+"))
		behind, err2 := strconv.Atoi(strings.TrimPrefix(bh, "-"))
		if ok && err1 == nil && err2 == nil {
			b.Ahead, b.Behind, b.HasAB = ahead, behind, true
		}
	}
}

func truncate(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}
