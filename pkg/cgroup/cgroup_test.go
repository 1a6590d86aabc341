package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLocateFindsTheV2MountWhereverItIs(t *testing.T) {
	const hybrid = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	const container = `1200 1100 0:38 /lxc/box /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw
`
	const escaped = `41 31 0:38 / /mnt/cgroup\040two rw - cgroup2 none rw
`
	for _, c := range []struct{ name, cgroups, mounts, want string }{
		{"hybrid", "4:memory:/x\n0::/user.slice/a.scope\n", hybrid, "/sys/fs/cgroup/unified/user.slice/a.scope"},
		{"root", "0::/\n", hybrid, "/sys/fs/cgroup/unified"},
		{"a container's subtree", "0::/lxc/box/init.scope\n", container, "/sys/fs/cgroup/init.scope"},
		{"a space in the mount point", "0::/a\n", escaped, "/mnt/cgroup two/a"},
	} {
		got, err := locate(c.cgroups, c.mounts)
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	for _, c := range []struct{ name, cgroups, mounts string }{
		{"v1 only", "4:memory:/x\n", hybrid},
		{"no v2 mount", "0::/a\n", "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"},
		// A prefix of a name is not its parent.
		{"outside the mounted subtree", "0::/lxc/boxer\n", container},
	} {
		if got, err := locate(c.cgroups, c.mounts); err == nil {
			t.Errorf("%s: got %q, want an error", c.name, got)
		}
	}
}

// A path read back from a record is never written into unless it is a
// cgroup: no cgroup.kill appears in an ordinary directory.
func TestAtRefusesWhatIsNotACgroup(t *testing.T) {
	dir := t.TempDir()
	if _, err := At(dir); err == nil {
		t.Fatalf("At(%s) accepted a directory of an ordinary file system", dir)
	}
	if _, err := At("relative"); err == nil {
		t.Fatal("At accepted a relative path")
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); !os.IsNotExist(err) {
		t.Fatalf("cgroup.kill appeared in %s: %v", dir, err)
	}
}

// A child started in a group cannot take a descendant out of reach by
// leaving its session: one signal ends them all, and the emptied group goes.
func TestSignalEndsEveryProcessThatLeftTheSession(t *testing.T) {
	g, err := New("lm-test-" + strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Skipf("this system gives no writable cgroup v2: %v", err)
	}
	t.Cleanup(func() { g.Signal(syscall.SIGKILL); g.Remove(5 * time.Second) })
	if _, err := At(g.Dir); err != nil {
		t.Fatal(err)
	}
	dir, err := g.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	marker := filepath.Join(t.TempDir(), "escaped.pid")
	cmd := exec.Command("sh", "-c", `(setsid sleep 300 & echo $! > "$1")`, "sh", marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := g.Remove(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Dir); !os.IsNotExist(err) {
		t.Fatalf("the cgroup is still there: %v", err)
	}
	// Orphaned when its shell exited, it was init's to reap: a process by
	// that pid now can only be an unrelated one.
	if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && strings.HasPrefix(string(stat), "sleep\x00300") {
		t.Fatalf("process %d (sleep 300, in a session of its own) survived", pid)
	}
}

// A job started from inside another job has its cgroup below the other's:
// ending the outer one ends both, and removing it removes both.
func TestRemoveTakesTheCgroupsBelow(t *testing.T) {
	g, err := New("lm-test-outer-" + strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Skipf("this system gives no writable cgroup v2: %v", err)
	}
	t.Cleanup(func() { g.Signal(syscall.SIGKILL); g.Remove(5 * time.Second) })
	inner := Group{Dir: filepath.Join(g.Dir, "lm-inner")}
	if err := os.Mkdir(inner.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := inner.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if err := g.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("sleep 300 in the inner cgroup exited by itself")
	}
	if err := g.Remove(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(g.Dir); !os.IsNotExist(err) {
		t.Fatalf("the outer cgroup is still there: %v", err)
	}
}
