package hub

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"lmtool.dev/lm/pkg/servers"
)

// settleDelay lets a save finish before the file is read: editors write in
// several steps (truncate and write, or write a copy and rename it over).
const settleDelay = 100 * time.Millisecond

// The watch asks the kernel only for what can end a save of the servers
// file. The directory is LM_HOME, where every lm process writes the store: a
// watch of its every change (fsnotify's) also reports each page a commit
// writes, which cost an idle gateway 0.2 ms of CPU per commit made anywhere.
// So the directory is watched for the file being created (a hard link),
// moved in (a copy renamed over it), moved out or removed, and the file
// itself for being closed after writing (saved in place, as 'echo >' and
// some editors do); a commit to the store raises no event at all.
const (
	dirEvents  = syscall.IN_CREATE | syscall.IN_MOVED_TO | syscall.IN_MOVED_FROM | syscall.IN_DELETE
	fileEvents = syscall.IN_CLOSE_WRITE
)

// watchConfig reloads servers.json whenever it changes on disk, so a hand
// edit takes effect like 'lm servers add' does. It watches the directory,
// not the file: editors replace the file by rename, which ends a watch on
// the file itself.
func (h *Hub) watchConfig() error {
	if err := os.MkdirAll(h.home, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", h.home, err)
	}
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return fmt.Errorf("watch %s: %w", h.home, err)
	}
	if _, err := syscall.InotifyAddWatch(fd, h.home, dirEvents); err != nil {
		syscall.Close(fd)
		return fmt.Errorf("watch %s: %w", h.home, err)
	}
	path := servers.Path(h.home)
	// Absent for now, the file is watched once the directory's watch sees
	// it arrive.
	syscall.InotifyAddWatch(fd, path, fileEvents)
	// A non-blocking descriptor in an *os.File waits in the runtime's
	// poller, so closing the file ends a pending read.
	events := os.NewFile(uintptr(fd), "inotify")
	changed := make(chan struct{}, 1)
	go func() {
		<-h.ctx.Done()
		events.Close()
	}()
	go readConfigEvents(events, fd, path, changed)
	go func() {
		var settle <-chan time.Time
		for {
			select {
			case <-h.ctx.Done():
				return
			case <-changed:
				settle = time.After(settleDelay)
			case <-settle:
				settle = nil
				if err := h.Reload(); err != nil {
					h.log.Error("servers file not applied; keeping the configuration last loaded", "err", err)
				} else {
					h.log.Info("servers file reloaded", "path", path)
				}
			}
		}
	}()
	return nil
}

// readConfigEvents signals changed when an event concerns the file at
// path, or when the kernel dropped events (its queue overflowed), until the
// descriptor is closed. A file that arrives in the directory is watched
// anew: the watch of the file it replaced ended with it.
func readConfigEvents(events *os.File, fd int, path string, changed chan<- struct{}) {
	name := filepath.Base(path)
	buf := make([]byte, 64<<10)
	for {
		n, err := events.Read(buf)
		if err != nil {
			return
		}
		news, arrived := readEvents(buf[:n], name)
		if arrived {
			syscall.InotifyAddWatch(fd, path, fileEvents)
		}
		if news {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}
}

// readEvents reads a buffer of inotify events: news when one concerns the
// file called name (the directory's events name it; the file's own carry no
// name) or the kernel dropped events, arrived when the file was created or
// moved into the directory.
func readEvents(buf []byte, name string) (news, arrived bool) {
	for len(buf) >= syscall.SizeofInotifyEvent {
		mask := binary.NativeEndian.Uint32(buf[4:8])
		size := syscall.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[12:16]))
		if size > len(buf) {
			return true, true // a torn read: look at the file rather than miss a change
		}
		named := string(bytes.TrimRight(buf[syscall.SizeofInotifyEvent:size], "\x00"))
		switch {
		case mask&syscall.IN_Q_OVERFLOW != 0:
			news, arrived = true, true
		case mask&syscall.IN_IGNORED != 0:
			// A watch ended (its file was replaced or removed): the
			// directory's own event says so.
		case named == "" || named == name:
			news = true
			arrived = arrived || mask&(syscall.IN_CREATE|syscall.IN_MOVED_TO) != 0
		}
		buf = buf[size:]
	}
	return news, arrived
}
