package confine

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Files lists the regular files below a directory as slash-separated paths
// relative to it, sorted, leaving out .git directories. The walk stays
// beneath the root: the directory itself may be reached through a symlink
// inside the root, but links met on the way are not followed. A directory
// it cannot read is listed in unreadable, named the same way with the
// reason, and the walk goes on (as find and rg do, with a message).
//
// Names need not be UTF-8 (io/fs, and so Root.FS, would refuse them), so
// the walk reads directory descriptors itself: each subdirectory is opened
// relative to its parent's descriptor by its one-component name with
// O_NOFOLLOW, one system call per directory, which no link can redirect.
func (r *Root) Files(ctx context.Context, resolved string) (files []string, unreadable []*fs.PathError, err error) {
	fd, err := r.openFD(resolved, unix.O_DIRECTORY)
	var errno unix.Errno
	switch {
	case err != nil && !IsOutside(err) && errors.As(err, &errno):
		// The directory itself refused: the file system said no, not lm.
		return nil, []*fs.PathError{{Op: "open", Path: ".", Err: errno}}, nil
	case err != nil:
		return nil, nil, err
	}
	w := walker{ctx: ctx}
	err = w.walk(fd, "")
	sort.Strings(w.files)
	return w.files, w.unreadable, err
}

type walker struct {
	ctx        context.Context
	files      []string
	unreadable []*fs.PathError
}

// walk adds the regular files below the directory open as fd (which it
// closes), named with prefix.
func (w *walker) walk(fd int, prefix string) error {
	dir := os.NewFile(uintptr(fd), prefix)
	defer dir.Close()
	entries, err := dir.ReadDir(-1)
	if err != nil {
		name := strings.TrimSuffix(prefix, "/")
		if name == "" {
			name = "."
		}
		var errno unix.Errno
		if errors.As(err, &errno) {
			err = errno
		}
		w.unreadable = append(w.unreadable, &fs.PathError{Op: "read", Path: name, Err: err})
	}
	for _, e := range entries {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		switch {
		case e.IsDir() && e.Name() != ".git":
			sub, err := retryEINTR(func() (int, error) {
				return unix.Openat(fd, e.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			})
			switch {
			case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ENOENT):
				continue // swapped for a link, or gone, since it was listed
			case err != nil:
				w.unreadable = append(w.unreadable, &fs.PathError{Op: "open", Path: prefix + e.Name(), Err: err})
				continue
			}
			if err := w.walk(sub, prefix+e.Name()+"/"); err != nil {
				return err
			}
		case e.Type().IsRegular():
			w.files = append(w.files, prefix+e.Name())
		}
	}
	return nil
}
