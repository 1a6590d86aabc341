// Package proc reads what lm needs to know of other processes from /proc:
// whether one still runs, and which are the children of a process or the
// members of a process group. Supervisors use it to leave nothing behind,
// and the CLI to tell a live gateway from a stale pid file.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// Stat is the part of /proc/PID/stat lm reads.
type Stat struct {
	PID, PPID, PGRP int
	// State is R (running), S (sleeping), Z (zombie: ended, not yet
	// reaped), and so on.
	State byte
	// Start is when the process started, in clock ticks after boot: with
	// the pid it names one process, even after the pid is reused.
	Start uint64
}

// Read parses /proc/PID/stat.
func Read(pid int) (Stat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return parse(pid, data)
}

// parse reads "pid (comm) state ppid pgrp …". The command name may itself
// hold spaces and parentheses, so the fields start after the last ')'.
func parse(pid int, data []byte) (Stat, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := bytes.Fields(data[i+1:])
	// fields[0] is field 3 of proc(5): state, ppid, pgrp, … starttime (22).
	if len(fields) < 20 || len(fields[0]) != 1 {
		return Stat{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ppid, err1 := strconv.Atoi(string(fields[1]))
	pgrp, err2 := strconv.Atoi(string(fields[2]))
	start, err3 := strconv.ParseUint(string(fields[19]), 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return Stat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return Stat{PID: pid, PPID: ppid, PGRP: pgrp, State: fields[0][0], Start: start}, nil
}

// Running reports whether pid exists and has not ended: a zombie has ended
// and only waits for its parent to reap it, which in a container whose
// init does not reap may be never. Where /proc cannot be read, a process
// that answers signals counts as running.
func Running(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	s, err := Read(pid)
	return err != nil || s.State != 'Z'
}

// BootID names this boot of the machine ("" where the kernel does not
// say): a pid or start time recorded in another boot names nothing that
// still runs, even when a process of this boot happens to have it. It is
// read once: a process outlives no boot.
var BootID = sync.OnceValue(func() string {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(data))
})

// MachineID names this process table ("" where it cannot be told): the
// machine's id (systemd's, else D-Bus's, else the host name) with the pid
// namespace. A process recorded under another (on another machine sharing
// a queue's database, or in another container, whose image may carry the
// same machine id) cannot be looked up in this one's /proc.
var MachineID = sync.OnceValue(func() string {
	machine := ""
	for _, path := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		if data, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(data)) > 0 {
			machine = string(bytes.TrimSpace(data))
			break
		}
	}
	if name, err := os.Hostname(); machine == "" && err == nil {
		machine = "host:" + name
	}
	if machine == "" {
		return ""
	}
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return machine + "/" + ns
})

// Process names one process across pid reuse: its pid and start time.
type Process struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start" jsonschema:"start time in clock ticks after boot"`
}

// Self is this process, read once: its pid and start time never change.
var Self = sync.OnceValues(func() (Process, error) {
	s, err := Read(os.Getpid())
	return Process{PID: s.PID, Start: s.Start}, err
})

// Alive reports whether the process still runs: its pid runs, and is still
// the process that started then. This process is, without reading /proc:
// each instruction it claims names it, and is shown with that answer.
func (p Process) Alive() bool {
	if me, err := Self(); err == nil && p == me {
		return true
	}
	s, err := Read(p.PID)
	return err == nil && s.Start == p.Start && s.State != 'Z'
}

// Descendants lists the processes below root in all: its children, theirs,
// and so on.
func Descendants(all []Stat, root int) []Stat {
	children := map[int][]Stat{}
	for _, s := range all {
		children[s.PPID] = append(children[s.PPID], s)
	}
	var out []Stat
	next := []int{root}
	seen := map[int]bool{root: true}
	for len(next) > 0 {
		pid := next[0]
		next = next[1:]
		for _, c := range children[pid] {
			if !seen[c.PID] {
				seen[c.PID] = true
				out = append(out, c)
				next = append(next, c.PID)
			}
		}
	}
	return out
}

// All lists every process; those that end while it reads are left out.
func All() []Stat {
	entries, _ := os.ReadDir("/proc")
	var all []Stat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := Read(pid); err == nil {
			all = append(all, s)
		}
	}
	return all
}
