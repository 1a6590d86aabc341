package proc

import (
	"os"

	"golang.org/x/sys/unix"
)

// Exited returns a channel that is closed when pid ends, and a function
// that stops watching. It watches a pidfd through the runtime's poller, so a
// long wait on a quiet process costs nothing: no timer, no thread. ok is
// false where pidfds are unavailable (Linux before 5.10) or pid is already
// gone; callers then check [Running] themselves.
func Exited(pid int) (ended <-chan struct{}, stop func(), ok bool) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, nil, false
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	conn, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, nil, false
	}
	ch := make(chan struct{})
	go func() {
		// A pidfd becomes readable when its process ends. Read parks
		// the goroutine in the poller until then, or until stop closes
		// the file, which ends the wait with an error.
		err := conn.Read(func(fd uintptr) bool {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 0)
			return err == nil && n > 0
		})
		if err == nil {
			close(ch)
		}
	}()
	return ch, func() { f.Close() }, true
}
