package proc

import (
	"os/exec"
	"testing"
	"time"
)

func TestExitedClosesWhenTheProcessEnds(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended, stop, ok := Exited(cmd.Process.Pid)
	if !ok {
		t.Fatal("pidfds are unavailable on this kernel")
	}
	defer stop()
	select {
	case <-ended:
		t.Fatal("reported ended while the process runs")
	case <-time.After(100 * time.Millisecond):
	}
	cmd.Process.Kill()
	cmd.Wait()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the end of the process was not reported")
	}
}

func TestExitedStopsWatching(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	ended, stop, ok := Exited(cmd.Process.Pid)
	if !ok {
		t.Fatal("pidfds are unavailable on this kernel")
	}
	stop()
	select {
	case <-ended:
		t.Fatal("a stopped watch reported an end")
	case <-time.After(100 * time.Millisecond):
	}
}
