package confine

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Files lists the regular files below a directory as slash-separated paths
// relative to it, sorted, leaving out .git directories. The walk stays
// beneath the root: the directory itself may be reached through a symlink
// inside the root, but links met on the way are not followed, and
// unreadable entries are skipped (as find does, with a message).
func (r *Root) Files(ctx context.Context, resolved string) ([]string, error) {
	if filepath.IsAbs(resolved) {
		if err := r.mayLeave(resolved); err != nil {
			return nil, err
		}
	}
	var fsys fs.FS
	start := filepath.ToSlash(resolved)
	if filepath.IsAbs(resolved) {
		fsys, start = os.DirFS(resolved), "."
	} else {
		// A directory named through a symlink is walked where it leads
		// (WalkDir would not enter it), still beneath the root.
		sub, err := r.root.OpenRoot(resolved)
		switch {
		case r.leaves(err):
			fsys, start = os.DirFS(r.Abs(resolved)), "."
		case err != nil:
			return nil, r.classify(resolved, err)
		default:
			defer sub.Close()
			fsys, start = sub.FS(), "."
		}
	}
	var files []string
	err := fs.WalkDir(fsys, start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return fs.SkipDir
		}
		if d.Type().IsRegular() {
			files = append(files, strings.TrimPrefix(p, "./"))
		}
		return ctx.Err()
	})
	sort.Strings(files)
	return files, err
}
