//go:build !linux

package hub

import "syscall"

// childAttrs puts a child in its own process group (npx spawns node: the
// whole group is signalled).
func childAttrs() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
