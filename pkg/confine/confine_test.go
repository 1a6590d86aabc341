package confine

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"lmtool.dev/lm/pkg/op"
)

const secret = "SECRET-7f2e"

// layout is a root with every way out a caller might try, beside the
// directory it leads to.
func layout(t *testing.T) (root, outside string) {
	t.Helper()
	root, outside = t.TempDir(), t.TempDir()
	write := func(path, body string) {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "secret.txt"), secret)
	write(filepath.Join(root, "in.txt"), "inside")
	write(filepath.Join(root, "d", "deep.txt"), "deep")
	write(filepath.Join(root, "caf\xe9", "n\xff.txt"), "not UTF-8")
	for link, target := range map[string]string{
		"abs-file":     filepath.Join(outside, "secret.txt"),
		"abs-dir":      outside,
		"rel-file":     "../" + filepath.Base(outside) + "/secret.txt",
		"d/up":         "../..",
		"inner":        "d",
		"\xfe-out":     outside,
		"d/inner-file": "deep.txt",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root, outside
}

var waysOut = []string{
	"../x", "abs-file", "abs-dir/secret.txt", "rel-file", "d/up/" + "x", "\xfe-out/secret.txt", "d/../../x",
}

// Every way out is refused by every way in, as outside_root, and nothing
// outside is read.
func TestNothingLeavesTheRoot(t *testing.T) {
	root, outside := layout(t)
	r, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	names := append(slices.Clone(waysOut), filepath.Join(outside, "secret.txt"), filepath.Join(root, "abs-file"))
	for _, name := range names {
		rel, err := r.Resolve(name)
		if err != nil {
			if !IsOutside(err) {
				t.Errorf("resolve %q: %v, want outside_root", name, err)
			}
			continue
		}
		if _, err := r.Stat(rel); !IsOutside(err) && !os.IsNotExist(err) {
			t.Errorf("stat %q: %v", name, err)
		}
		if data, err := r.ReadFile(rel); err == nil || strings.Contains(string(data), secret) {
			t.Errorf("read %q: %q, %v", name, data, err)
		}
		if fd, err := r.OpenFD(rel); err == nil {
			unix.Close(fd)
			t.Errorf("openat2 %q succeeded", name)
		}
		if data, err := r.ReadLimited(rel, 1<<20); err == nil {
			t.Errorf("read limited %q: %q", name, data)
		}
		if f, err := r.OpenDir(rel); err == nil {
			f.Close()
			t.Errorf("open dir %q succeeded", name)
		}
		if _, err := r.WriteFile(rel+"/new", []byte("x"), true); err == nil {
			t.Errorf("write %q succeeded", name)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("written outside: %v", entries)
	}
	// Links that stay inside work, and a walk does not follow links.
	if data, err := r.ReadFile("inner/inner-file"); err != nil || string(data) != "deep" {
		t.Errorf("a link inside: %q, %v", data, err)
	}
	files, unreadable, err := r.Files(context.Background(), ".")
	if err != nil || len(unreadable) > 0 {
		t.Fatal(err, unreadable)
	}
	if want := []string{"caf\xe9/n\xff.txt", "d/deep.txt", "in.txt"}; !slices.Equal(files, want) {
		t.Errorf("walk: %q, want %q", files, want)
	}
	if files, _, err := r.Files(context.Background(), "abs-dir"); !IsOutside(err) || len(files) > 0 {
		t.Errorf("walk through a link out: %q, %v", files, err)
	}
}

// The person's allow_outside_root opens names outside as given.
func TestOutsideIsThePersonsChoice(t *testing.T) {
	root, outside := layout(t)
	person := &op.Env{Caller: op.Person()}
	r, err := ForOutside(person, root, true)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{"abs-file", "rel-file", filepath.Join(outside, "secret.txt"), "../" + filepath.Base(outside) + "/secret.txt"} {
		rel, err := r.Resolve(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fd, err := r.OpenFD(rel)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f := os.NewFile(uintptr(fd), name)
		data, _ := io.ReadAll(f)
		f.Close()
		if string(data) != secret {
			t.Errorf("%s: %q", name, data)
		}
	}
	// An agent reaches outside only when the person granted it the field
	// (op.Operation.Call refuses it otherwise, before any handler runs).
	agent := &op.Env{Caller: op.Caller{Role: op.RoleAgent}, Roots: []string{root}}
	for _, granted := range []bool{false, true} {
		r, err := ForOutside(agent, "", granted)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := r.Resolve(filepath.Join(outside, "secret.txt"))
		if err == nil {
			_, err = r.ReadFile(rel)
		}
		if (err == nil) != granted {
			t.Errorf("granted %v: %v", granted, err)
		}
		r.Close()
	}
}

// An agent's root may only narrow its roots: a directory beneath them is
// fine, anything else (outside, through a link, none at all) is refused.
func TestAgentRootsOnlyNarrow(t *testing.T) {
	root, outside := layout(t)
	agent := &op.Env{Caller: op.Caller{Role: op.RoleAgent}, Roots: []string{root}}
	for _, dir := range []string{"", "d", filepath.Join(root, "d"), "inner"} {
		r, err := For(agent, dir)
		if err != nil {
			t.Errorf("%q: %v", dir, err)
			continue
		}
		if _, err := r.Resolve("../in.txt"); dir != "" && !IsOutside(err) {
			t.Errorf("%q: a narrowed root lets .. out: %v", dir, err)
		}
		r.Close()
	}
	for _, dir := range []string{outside, "..", "abs-dir", "d/up", "\xfe-out", "/"} {
		if r, err := For(agent, dir); err == nil {
			r.Close()
			t.Errorf("%q: opened", dir)
		} else if op.KindOf(err) != op.KindDenied {
			t.Errorf("%q: %v, want denied", dir, err)
		}
	}
	if _, err := For(&op.Env{}, ""); op.KindOf(err) != op.KindDenied {
		t.Errorf("a caller without roots: %v", err)
	}
}

// Writes never land in git's files or lm's home, however they are named.
func TestProtectedDirectories(t *testing.T) {
	root, _ := layout(t)
	for _, dir := range []string{".git/hooks", "bare.git/refs", "bare.git/objects", "home"} {
		os.MkdirAll(filepath.Join(root, dir), 0o755)
	}
	os.WriteFile(filepath.Join(root, "bare.git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.Symlink(".git", filepath.Join(root, "gitlink"))
	env := &op.Env{Caller: op.Person(), Home: filepath.Join(root, "home")}
	r, err := For(env, root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{".git/config", ".git/hooks/pre-commit", ".GIT/config", "sub/.git", "gitlink/config", "bare.git/config", "bare.git/hooks/x", "home/mcp_allowlist.toml", "home/new/x"} {
		if _, err := r.WriteFile(name, []byte("x"), true); op.KindOf(err) != op.KindDenied {
			t.Errorf("%s: %v, want denied", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, ".git", "config")); err == nil {
		t.Error("wrote .git/config")
	}
	if path, err := r.WriteFile("docs/\xffok.md", []byte("x"), false); err != nil || path != filepath.Join(root, "docs", "\xffok.md") {
		t.Errorf("an ordinary file: %s, %v", path, err)
	}
	if _, err := r.WriteFile("docs/\xffok.md", []byte("y"), false); op.KindOf(err) != op.KindConflict {
		t.Errorf("replacing without force: %v", err)
	}
}

// An agent whose roots hold lm's home (a gateway started in $HOME) reads
// nothing there — the person's token and secrets — by name or through a
// link, while the rest of its roots read as before.
func TestAgentsDoNotReadLMsHome(t *testing.T) {
	root, _ := layout(t)
	home := filepath.Join(root, ".local", "share", "lm")
	os.MkdirAll(home, 0o700)
	os.WriteFile(filepath.Join(home, "gateway.token"), []byte("lmp_SECRET"), 0o600)
	os.Symlink(filepath.Join(".local", "share", "lm", "gateway.token"), filepath.Join(root, "token-link"))
	agent := &op.Env{Caller: op.Caller{Role: op.RoleAgent}, Roots: []string{root}, Home: home}
	r, err := For(agent, "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{".local/share/lm/gateway.token", "token-link"} {
		resolved, err := r.Resolve(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if data, err := r.ReadFile(resolved); op.KindOf(err) != op.KindDenied || strings.Contains(string(data), "SECRET") {
			t.Errorf("ReadFile %s: %q, %v", name, data, err)
		}
		if fd, err := r.OpenFD(resolved); op.KindOf(err) != op.KindDenied {
			if err == nil {
				unix.Close(fd)
			}
			t.Errorf("OpenFD %s: %v", name, err)
		}
	}
	if data, err := r.ReadFile("in.txt"); err != nil || len(data) == 0 {
		t.Errorf("an ordinary file: %q, %v", data, err)
	}
}

// An opener keeping a directory open opens what OpenFD would, file by
// file, while the tree changes under it: a file swapped for a link out is
// refused, one swapped for a link inside is followed, and a directory
// swapped for a link out leads nowhere: what the opener still reads is in
// the directory it kept.
// openerIn opens root and an opener of it, both closed when t ends.
func openerIn(t *testing.T, root string) *Opener {
	t.Helper()
	r, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	o := r.Opener()
	t.Cleanup(func() { o.Close() })
	return o
}

func TestOpenerOpensWhatOpenFDWould(t *testing.T) {
	root, outside := layout(t)
	for _, name := range []string{"a.txt", "b.txt", "c.txt", "d.txt"} {
		os.WriteFile(filepath.Join(root, "d", name), []byte(name), 0o644)
	}
	os.WriteFile(filepath.Join(outside, "e.txt"), []byte(secret), 0o644)
	o := openerIn(t, root)
	read := func(name string) (string, error) {
		fd, err := o.OpenFD(name)
		if err != nil {
			return "", err
		}
		f := os.NewFile(uintptr(fd), name)
		defer f.Close()
		data, err := io.ReadAll(f)
		return string(data), err
	}
	for _, name := range []string{"d/a.txt", "d/b.txt"} { // the second keeps d
		if got, err := read(name); err != nil || got != filepath.Base(name) {
			t.Fatalf("%s: %q, %v", name, got, err)
		}
	}
	if o.dirFD < 0 {
		t.Fatal("the opener did not keep the directory: the rest would test OpenFD only")
	}
	swap := func(name, target string) {
		os.Remove(filepath.Join(root, name))
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	swap("d/c.txt", filepath.Join(outside, "secret.txt"))
	if got, err := read("d/c.txt"); !IsOutside(err) || strings.Contains(got, secret) {
		t.Errorf("a file swapped for a link out: %q, %v, want outside_root", got, err)
	}
	swap("d/d.txt", "a.txt")
	if got, err := read("d/d.txt"); err != nil || got != "a.txt" {
		t.Errorf("a file swapped for a link inside: %q, %v, want a.txt's content", got, err)
	}
	if err := os.Rename(filepath.Join(root, "d"), filepath.Join(root, "old")); err != nil {
		t.Fatal(err)
	}
	swap("d", outside)
	if got, err := read("d/e.txt"); !IsOutside(err) || strings.Contains(got, secret) {
		t.Errorf("a directory swapped for a link out: %q, %v, want outside_root", got, err)
	}
	// The kept directory is the one moved, still in the root: its file,
	// not what the link in its place leads to.
	if got, err := read("d/b.txt"); err != nil || got != "b.txt" {
		t.Errorf("a file of the kept directory, moved: %q, %v, want its own content", got, err)
	}
	os.WriteFile(filepath.Join(outside, "b2.txt"), []byte(secret), 0o644)
	if got, err := read("d/b2.txt"); !IsOutside(err) || strings.Contains(got, secret) {
		t.Errorf("a file only the link leads to: %q, %v, want outside_root", got, err)
	}
	for _, name := range waysOut {
		if got, err := read(name); err == nil {
			t.Errorf("%s: %q", name, got)
		}
	}
}

// A walk over many directories on several CPUs lists what a plain
// filepath.WalkDir finds: every regular file once, no link followed, no
// .git entered, sorted.
func TestWalkOnEveryCPUListsWhatWalkDirFinds(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	root, outside := layout(t)
	for i := range 300 {
		dir := filepath.Join(root, "w", fmt.Sprint(i%7), fmt.Sprint(i%11), fmt.Sprint(i%3))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), nil, 0o644)
		if i%50 == 0 {
			os.Symlink(outside, filepath.Join(dir, "out"))
			os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
			os.WriteFile(filepath.Join(dir, ".git", "HEAD"), nil, 0o644)
		}
	}
	var want []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			t.Fatal(err)
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.Type().IsRegular():
			rel, _ := filepath.Rel(root, path)
			want = append(want, rel)
		}
		return nil
	})
	r, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for range 5 {
		got, unreadable, err := r.Files(context.Background(), ".")
		if err != nil || len(unreadable) > 0 || !slices.Equal(got, want) {
			t.Fatalf("walk: %d files (%v, %v), WalkDir %d; first difference at %d", len(got), err, unreadable, len(want), firstDifference(got, want))
		}
	}
}

func firstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// Names an opener is handed unclean still cannot leave: ".." is never
// opened relative to a kept directory, which, moved out of the root since,
// would lead to the directory it was moved to.
func TestOpenerRefusesDotDotOut(t *testing.T) {
	root, outside := layout(t)
	os.MkdirAll(filepath.Join(root, "d", "e"), 0o755)
	os.WriteFile(filepath.Join(root, "d", "e", "a.txt"), nil, 0o644)
	os.WriteFile(filepath.Join(root, "d", "e", "b.txt"), nil, 0o644)
	o := openerIn(t, root)
	opened := func(name string) (string, error) {
		fd, err := o.OpenFD(name)
		if err != nil {
			return "", err
		}
		defer unix.Close(fd)
		return os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	}
	if real, err := opened("d/e/../../.."); !IsOutside(err) {
		t.Errorf("d/e/../../..: %s, %v, want outside_root", real, err)
	}
	for _, name := range []string{"d/e/a.txt", "d/e/b.txt"} { // the second keeps d/e
		if _, err := opened(name); err != nil {
			t.Fatal(name, err)
		}
	}
	if real, err := opened("d/e/.."); err != nil || real != filepath.Join(o.root.Dir, "d") {
		t.Errorf("d/e/..: %s, %v, want the root's d", real, err)
	}
	if err := os.Rename(filepath.Join(root, "d", "e"), filepath.Join(outside, "e")); err != nil {
		t.Fatal(err)
	}
	if real, err := opened("d/e/.."); err == nil {
		t.Errorf("d/e/.. after d/e moved out opened %s", real)
	}
}

// A FIFO in the root, which nobody writes to, is refused by every reader
// instead of holding the call forever in open: an agent that names one
// must not stall the server answering it.
func TestFIFOIsRefusedNotWaitedOn(t *testing.T) {
	root, _ := layout(t)
	if err := unix.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	agent := &op.Env{Caller: op.Caller{Role: op.RoleAgent}}
	person := &op.Env{Caller: op.Caller{Role: op.RolePerson}}
	readers := map[string]func() error{
		"ReadFile":           func() error { _, err := r.ReadFile("pipe"); return err },
		"ReadLimited":        func() error { _, err := r.ReadLimited("pipe", 1<<20); return err },
		"ReadInput of agent": func() error { _, err := ReadInput(agent, r, "pipe", 1<<20); return err },
		"ReadInput of person": func() error {
			_, err := ReadInput(person, r, filepath.Join(root, "pipe"), 1<<20)
			return err
		},
		"Opener": func() error {
			o := r.Opener()
			defer o.Close()
			for _, name := range []string{"d/../pipe", "pipe"} {
				fd, err := o.OpenFD(name)
				if err != nil {
					return err
				}
				unix.Close(fd)
			}
			return nil
		},
	}
	for name, read := range readers {
		done := make(chan error, 1)
		go func() { done <- read() }()
		select {
		case err := <-done:
			if name != "Opener" && (err == nil || !strings.Contains(err.Error(), "not a regular file")) {
				t.Errorf("%s: %v, want not a regular file", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s blocked opening a FIFO nobody writes to", name)
		}
	}
}

// An agent writes none of the files from which the person's tools start
// programs when they open the project (an MCP client's server list, VS
// Code's tasks, direnv's .envrc), by name or through a link to their
// directory; the person writes them.
func TestAgentsDoNotWriteWhatStartsPrograms(t *testing.T) {
	root, _ := layout(t)
	os.MkdirAll(filepath.Join(root, ".vscode"), 0o755)
	os.Symlink(".vscode", filepath.Join(root, "editor"))
	agent := &op.Env{Caller: op.Caller{Role: op.RoleAgent}, Roots: []string{root}}
	r, err := For(agent, "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{".mcp.json", ".vscode/tasks.json", "sub/.Claude/settings.json", ".cursor/mcp.json", ".envrc", "mise.toml", "editor/mcp.json"} {
		if _, err := r.WriteFile(name, []byte(`{"servers":{"x":{"command":"touch"}}}`), true); op.KindOf(err) != op.KindDenied {
			t.Errorf("agent wrote %s: %v", name, err)
		}
		if _, err := os.Lstat(filepath.Join(root, name)); err == nil && name != "editor/mcp.json" {
			t.Errorf("%s exists", name)
		}
	}
	if _, err := os.Stat(filepath.Join(root, ".vscode", "mcp.json")); err == nil {
		t.Error("the write through the link reached .vscode/mcp.json")
	}
	if _, err := r.WriteFile("docs/vscode.md", []byte("ok"), false); err != nil {
		t.Errorf("an ordinary file: %v", err)
	}
	person, err := For(&op.Env{Caller: op.Person()}, root)
	if err != nil {
		t.Fatal(err)
	}
	defer person.Close()
	if _, err := person.WriteFile(".vscode/mcp.json", []byte("{}"), false); err != nil {
		t.Errorf("the person's write: %v", err)
	}
}

// An agent whose root is itself inside such a directory writes nothing
// there either.
func TestAgentsRootedWhereProgramsStartWriteNothing(t *testing.T) {
	root, _ := layout(t)
	inside := filepath.Join(root, ".vscode", "sub")
	os.MkdirAll(inside, 0o755)
	r, err := For(&op.Env{Caller: op.Caller{Role: op.RoleAgent}, Roots: []string{inside}}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.WriteFile("tasks.json", []byte("{}"), false); op.KindOf(err) != op.KindDenied {
		t.Errorf("an agent rooted in .vscode wrote tasks.json: %v", err)
	}
}
