package confine

import (
	"context"
	"os"
	"sort"

	"golang.org/x/sys/unix"
)

// Files lists the regular files below a directory as slash-separated paths
// relative to it, sorted, leaving out .git directories. The walk stays
// beneath the root: the directory itself may be reached through a symlink
// inside the root, but links met on the way are not followed, and
// unreadable entries are skipped (as find does, with a message).
//
// Names need not be UTF-8 (io/fs, and so Root.FS, would refuse them), so
// the walk reads directory descriptors itself: each subdirectory is opened
// relative to its parent's descriptor by its one-component name with
// O_NOFOLLOW, one system call per directory, which no link can redirect.
func (r *Root) Files(ctx context.Context, resolved string) ([]string, error) {
	fd, err := r.openFD(resolved, unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	var files []string
	err = walkFD(ctx, fd, "", &files)
	sort.Strings(files)
	return files, err
}

// walkFD adds the regular files below the directory open as fd (which it
// closes) to files, named with prefix.
func walkFD(ctx context.Context, fd int, prefix string, files *[]string) error {
	dir := os.NewFile(uintptr(fd), prefix)
	entries, _ := dir.ReadDir(-1)
	defer dir.Close()
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch {
		case e.IsDir() && e.Name() != ".git":
			sub, err := retryEINTR(func() (int, error) {
				return unix.Openat(fd, e.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			})
			if err != nil {
				continue // unreadable, or swapped for a link since it was listed
			}
			if err := walkFD(ctx, sub, prefix+e.Name()+"/", files); err != nil {
				return err
			}
		case e.Type().IsRegular():
			*files = append(*files, prefix+e.Name())
		}
	}
	return nil
}
