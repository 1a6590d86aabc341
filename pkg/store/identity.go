package store

import (
	"fmt"
	"os"
	"syscall"
)

// Identity names the store file itself, not its path: the device and inode
// of lm.db. A reader that remembers it can tell when another store took the
// path's place — a gateway for another project on the same address, or a
// restore that replaced the file — and reload instead of applying changes
// meant for another queue. It is "" while the file does not exist.
func (s *Store) Identity() string {
	fi, err := os.Stat(s.Path)
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%x.%x", st.Dev, st.Ino)
}
