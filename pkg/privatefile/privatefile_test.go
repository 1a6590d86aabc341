package privatefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesOwnerOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "servers.json")
	for _, content := range []string{"first\n", "second\n"} {
		if err := Write(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		st, _ := os.Stat(path)
		if string(got) != content || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %q mode %v, want %q mode 0600", path, got, st.Mode().Perm(), content)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

// A symlink planted at the name is replaced, never written through.
func TestWriteDoesNotFollowASymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("untouched"), 0o644)
	path := filepath.Join(dir, "state.json")
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "untouched" {
		t.Errorf("the symlink's target was written: %q", got)
	}
	if st, _ := os.Lstat(path); st.Mode()&fs.ModeSymlink != 0 {
		t.Errorf("%s is still a symlink", path)
	}
}

func TestWriteFuncKeepsAnExistingFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "backup.db")
	os.WriteFile(path, []byte("old backup"), 0o600)
	err := WriteFunc(path, false, func(f *os.File) error { _, err := f.WriteString("new"); return err })
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("WriteFunc over an existing file = %v, want fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old backup" {
		t.Errorf("the existing file changed: %q", got)
	}
	// A write that fails leaves nothing under the name.
	fresh := filepath.Join(dir, "fresh.db")
	failed := errors.New("disk full")
	if err := WriteFunc(fresh, false, func(*os.File) error { return failed }); !errors.Is(err, failed) {
		t.Errorf("WriteFunc = %v, want the write's error", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("after a failed write the directory holds %v, want only backup.db", entries)
	}
}
