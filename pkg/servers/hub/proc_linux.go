package hub

import "syscall"

// childAttrs puts a child in its own process group (npx spawns node: the
// whole group is signalled) and has the kernel kill it if the gateway dies
// without stopping it.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
