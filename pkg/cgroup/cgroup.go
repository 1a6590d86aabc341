// Package cgroup gives a group of processes a cgroup v2 of its own, so that
// all of them can be ended at once whatever they did to leave their process
// group or session (setsid, double forks, daemons): the kernel keeps every
// descendant of a process in its cgroup, and `cgroup.kill` ends them all
// atomically, forks in flight included.
package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Group is one cgroup v2 directory.
type Group struct{ Dir string }

// New creates the cgroup name below the calling process's own cgroup in the
// v2 hierarchy. It fails where there is none (a v1-only system), where it
// may not be written (an unprivileged user outside a delegated subtree, a
// container's read-only /sys/fs/cgroup), or where the kernel cannot end a
// cgroup at once (before Linux 5.14, no cgroup.kill).
func New(name string) (Group, error) {
	parent, err := own()
	if err != nil {
		return Group{}, err
	}
	g := Group{Dir: filepath.Join(parent, name)}
	if err := os.Mkdir(g.Dir, 0o755); err != nil {
		return Group{}, fmt.Errorf("create cgroup: %w", err)
	}
	if _, err := os.Stat(filepath.Join(g.Dir, "cgroup.kill")); err != nil {
		os.Remove(g.Dir)
		return Group{}, errors.New("this kernel cannot end a cgroup at once (no cgroup.kill; Linux 5.14 or later has it)")
	}
	return g, nil
}

// At is the cgroup at dir, which must be a directory of a cgroup v2 file
// system: a path read back from a record is never written into elsewhere.
func At(dir string) (Group, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return Group{}, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	if fs.Type != unix.CGROUP2_SUPER_MAGIC || !filepath.IsAbs(dir) {
		return Group{}, fmt.Errorf("%s is not a cgroup v2 directory", dir)
	}
	return Group{Dir: dir}, nil
}

// Open returns the cgroup's directory, for SysProcAttr.CgroupFD: a child
// started with it begins life inside the cgroup, before it can fork.
func (g Group) Open() (*os.File, error) {
	return os.OpenFile(g.Dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
}

// Signal sends sig to every process in the cgroup. SIGKILL goes through
// cgroup.kill, which no fork can outrun; other signals go to each process
// listed, a courtesy that a process forking meanwhile may escape until the
// SIGKILL that follows.
func (g Group) Signal(sig syscall.Signal) error {
	if sig == syscall.SIGKILL {
		return os.WriteFile(filepath.Join(g.Dir, "cgroup.kill"), []byte("1"), 0)
	}
	pids, err := os.ReadFile(filepath.Join(g.Dir, "cgroup.procs"))
	if err != nil {
		return err
	}
	for _, field := range strings.Fields(string(pids)) {
		if pid, err := strconv.Atoi(field); err == nil {
			syscall.Kill(pid, sig)
		}
	}
	return nil
}

// Remove deletes the cgroup, and the cgroups below it (those of jobs its
// processes started), once their last process has exited, waiting up to
// limit for processes just killed to finish dying. A cgroup already gone is
// no error.
func (g Group) Remove(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		err := removeTree(g.Dir)
		switch {
		case err == nil || errors.Is(err, os.ErrNotExist):
			return nil
		case !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline):
			return fmt.Errorf("remove cgroup: %w", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// removeTree removes the cgroup at dir after those below it. A cgroup
// directory holds nothing else a process could remove: its files go with it.
func removeTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := removeTree(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return os.Remove(dir)
}

// own is the directory of the calling process's cgroup in the v2
// hierarchy, wherever that is mounted (/sys/fs/cgroup on unified systems,
// /sys/fs/cgroup/unified on hybrid ones).
func own() (string, error) {
	cgroups, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("read own cgroup: %w", err)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("read mounts: %w", err)
	}
	return locate(string(cgroups), string(mounts))
}

// locate finds the v2 cgroup named in cgroups (/proc/PID/cgroup) among
// mounts (/proc/PID/mountinfo).
func locate(cgroups, mounts string) (string, error) {
	var path string
	found := false
	for _, line := range strings.Split(cgroups, "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			path, found = p, true
		}
	}
	if !found {
		return "", errors.New("this process is in no cgroup v2 hierarchy")
	}
	for _, line := range strings.Split(mounts, "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPER
		fields := strings.Fields(line)
		sep := slices.Index(fields, "-")
		if sep < 5 || sep+1 >= len(fields) || fields[sep+1] != "cgroup2" {
			continue
		}
		root, mountpoint := unescape(fields[3]), unescape(fields[4])
		// A mount of a subtree (a container's) shows the part of the
		// hierarchy below its root.
		rel, ok := strings.CutPrefix(path, strings.TrimSuffix(root, "/"))
		if ok && (rel == "" || strings.HasPrefix(rel, "/")) {
			return filepath.Join(mountpoint, rel), nil
		}
	}
	return "", errors.New("no cgroup v2 file system is mounted where this process's cgroup is")
}

// unescape decodes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
