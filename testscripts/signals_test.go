package testscripts

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

// A run stuck where no cancellation reaches — opening a FIFO nobody
// writes blocks in the kernel — survives the first SIGTERM, which asks it
// to end cleanly, but not the second: lm never becomes a process that
// only SIGKILL ends.
func TestSecondSignalEndsAStuckRun(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("lm", "extract", "--type", "pattern", "--patterns", "x", "fifo")
	cmd.Dir, cmd.Env = dir, lmEnv(t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	waitUntil(t, "lm blocked opening the FIFO", func() bool { return blockedOnFIFO(cmd.Process.Pid) })

	// The first SIGTERM cancels the run; lm then restores the signal's
	// default, so one of the next ends it.
	for deadline := time.Now().Add(10 * time.Second); ; {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if status, ok := err.(*exec.ExitError); !ok || status.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
				t.Errorf("lm ended with %v, want SIGTERM", err)
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("lm survived SIGTERM after SIGTERM for 10s")
		}
	}
}

// blockedOnFIFO says whether one of pid's threads waits in the kernel for
// a FIFO's other end.
func blockedOnFIFO(pid int) bool {
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "wchan"))
	for _, f := range tasks {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), "wait_for_partner") {
			return true
		}
	}
	return false
}

// waitUntil polls cond for up to 10 s, failing the test with what it
// waited for.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
	}
}
