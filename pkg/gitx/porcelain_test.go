package gitx

import (
	"slices"
	"testing"
)

func TestParsePorcelain(t *testing.T) {
	report := "# branch.oid 1234\x00# branch.head main\x00# branch.upstream origin/main\x00# branch.ab +2 -1\x00# stash 3\x00" +
		"1 .M N... 100644 100644 100644 aaa aaa two  spaces \x00" +
		"2 R. N... 100644 100644 100644 bbb bbb R87 to\nname\x00from name\x00" +
		"2 C. N... 100644 100644 100644 bbb bbb C75 copy\x00orig\x00" +
		"u UU N... 100644 100644 100644 100644 c1 c2 c3 both.txt\x00" +
		"? new file\x00! ignored.log\x00"
	p, err := ParsePorcelain([]byte(report))
	if err != nil {
		t.Fatal(err)
	}
	if p.Branch != (Branch{OID: "1234", Head: "main", Upstream: "origin/main", Ahead: 2, Behind: 1, HasAB: true}) {
		t.Errorf("branch = %+v", p.Branch)
	}
	want := []Entry{
		{Kind: '1', Index: '.', Worktree: 'M', Submodule: "N...", Path: "two  spaces "},
		{Kind: '2', Index: 'R', Worktree: '.', Submodule: "N...", Score: "R87", Path: "to\nname", OrigPath: "from name"},
		{Kind: '2', Index: 'C', Worktree: '.', Submodule: "N...", Score: "C75", Path: "copy", OrigPath: "orig"},
		{Kind: 'u', Index: 'U', Worktree: 'U', Submodule: "N...", Path: "both.txt"},
		{Kind: '?', Index: '.', Worktree: '.', Path: "new file"},
		{Kind: '!', Index: '.', Worktree: '.', Path: "ignored.log"},
	}
	if !slices.Equal(p.Entries, want) {
		t.Errorf("entries =\n%+v\nwant\n%+v", p.Entries, want)
	}
	if r := renameOf(p.Entries[2]); r.Kind != "copy" || r.Score != 75 {
		t.Errorf("copy = %+v", r)
	}
}

func TestParsePorcelainErrors(t *testing.T) {
	for _, bad := range []string{"1 .M N...", "2 R. N... 1 2 3 a b R100 x\x00", "x y\x00", "1 .M short\x00", "?\x00"} {
		if _, err := ParsePorcelain([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseNumstat(t *testing.T) {
	got, err := ParseNumstat([]byte("3\t1\ta b.txt\x00-\t-\timg.bin\x000\t0\t\x00old\x00new\nname\x00"))
	if err != nil {
		t.Fatal(err)
	}
	want := []FileChange{{File: "a b.txt", Added: 3, Removed: 1}, {File: "img.bin", Binary: true}, {File: "new\nname", From: "old"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v", got)
	}
}

func FuzzParsePorcelain(f *testing.F) {
	f.Add([]byte("# branch.head main\x001 .M N... 100644 100644 100644 a a p\x002 R. N... 1 1 1 a a R1 x\x00y\x00? u\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePorcelain(data)
		if err != nil {
			return
		}
		for _, e := range p.Entries {
			if e.Path == "" && e.Kind != '?' && e.Kind != '!' {
				t.Errorf("entry without a path: %+v", e)
			}
		}
	})
}

func FuzzParseNumstat(f *testing.F) {
	f.Add([]byte("1\t2\ta\x00-\t-\tb\x000\t0\t\x00c\x00d\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		changes, err := ParseNumstat(data)
		if err != nil {
			return
		}
		for _, c := range changes {
			if c.Added < 0 && !c.Binary {
				t.Errorf("negative count: %+v", c)
			}
		}
	})
}
