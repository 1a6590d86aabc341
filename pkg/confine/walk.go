package confine

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Files lists the regular files below a directory as slash-separated paths
// relative to it, sorted, leaving out .git directories. The walk stays
// beneath the root: the directory itself may be reached through a symlink
// inside the root, but links met on the way are not followed. A directory
// it cannot read is listed in unreadable, named the same way with the
// reason, sorted too, and the walk goes on (as find and rg do, with a
// message).
//
// Names need not be UTF-8 (io/fs, and so Root.FS, would refuse them), so
// the walk reads directory descriptors itself: each subdirectory is opened
// relative to its parent's descriptor by its one-component name with
// O_NOFOLLOW, one system call per directory, which no link can redirect.
// Subdirectories are walked on every CPU: a big tree's listing is
// otherwise a stretch where one CPU works alone.
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
	w := walker{ctx: ctx, spare: make(chan struct{}, runtime.GOMAXPROCS(0)-1)}
	w.walk(fd, "")
	w.wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	sort.Strings(w.files)
	sort.Slice(w.unreadable, func(i, j int) bool { return w.unreadable[i].Path < w.unreadable[j].Path })
	return w.files, w.unreadable, nil
}

type walker struct {
	ctx   context.Context
	spare chan struct{} // a token per CPU free to walk a subdirectory besides this one
	wg    sync.WaitGroup

	mu         sync.Mutex
	files      []string
	unreadable []*fs.PathError
}

// walk adds the regular files below the directory open as fd (which it
// closes), named with prefix. A subdirectory goes to a goroutine of its own
// while a CPU is spare, else this one walks it.
func (w *walker) walk(fd int, prefix string) {
	dir := os.NewFile(uintptr(fd), prefix)
	defer dir.Close()
	var files []string
	var unreadable []*fs.PathError
	defer func() {
		w.mu.Lock()
		w.files = append(w.files, files...)
		w.unreadable = append(w.unreadable, unreadable...)
		w.mu.Unlock()
	}()
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
		unreadable = append(unreadable, &fs.PathError{Op: "read", Path: name, Err: err})
	}
	for _, e := range entries {
		if w.ctx.Err() != nil {
			return
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
				unreadable = append(unreadable, &fs.PathError{Op: "open", Path: prefix + e.Name(), Err: err})
				continue
			}
			select {
			case w.spare <- struct{}{}:
				w.wg.Go(func() {
					defer func() { <-w.spare }()
					w.walk(sub, prefix+e.Name()+"/")
				})
			default:
				w.walk(sub, prefix+e.Name()+"/")
			}
		case e.Type().IsRegular():
			files = append(files, prefix+e.Name())
		}
	}
}
