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

// A run stuck where no cancellation reaches — reading a checklist from a
// pipe whose writer never writes nor closes blocks in the kernel — survives
// the first SIGTERM, which asks it to end cleanly, but not the second: lm
// never becomes a process that only SIGKILL ends.
func TestSecondSignalEndsAStuckRun(t *testing.T) {
	stdin, writer, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	cmd := exec.Command("lm", "verify")
	cmd.Dir, cmd.Env, cmd.Stdin = t.TempDir(), lmEnv(t.TempDir()), stdin
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	waitUntil(t, "lm blocked reading its standard input", func() bool { return blockedReadingAPipe(cmd.Process.Pid) })

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

// blockedReadingAPipe says whether one of pid's threads waits in the
// kernel for a pipe to hold something (pipe_read, or anon_pipe_read on
// newer kernels).
func blockedReadingAPipe(pid int) bool {
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "wchan"))
	for _, f := range tasks {
		if b, err := os.ReadFile(f); err == nil && strings.HasSuffix(string(b), "pipe_read") {
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
