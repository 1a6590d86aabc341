package proc

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestParseTakesFieldsAfterTheLastParenthesis(t *testing.T) {
	s, err := parse(42, []byte("42 (a) b) (c) S 7 9 9 0 -1 4194560 101 0 0 0 5 3 0 0 20 0 1 0 123456 2228224 191\n"))
	if err != nil || s != (Stat{PID: 42, PPID: 7, PGRP: 9, State: 'S', Start: 123456}) {
		t.Fatalf("parse = %+v, %v", s, err)
	}
	for _, bad := range []string{"", "42 no name", "42 (x) S 7", "42 (x) S seven 9", "42 (x) S 7 9 9 0 -1 4194560"} {
		if _, err := parse(42, []byte(bad)); err == nil {
			t.Errorf("parse(%q) accepted", bad)
		}
	}
}

// A child is running until it exits; as an unreaped zombie it is not, and
// while it lives All lists it under this process as its parent.
func TestRunningAndAll(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !Running(pid) {
		t.Fatal("a sleeping child is not running")
	}
	if !slices.ContainsFunc(All(), func(s Stat) bool { return s.PID == pid && s.PPID == os.Getpid() }) {
		t.Fatal("All does not list the child under this process")
	}
	cmd.Process.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for Running(pid) { // killed but not yet waited for: a zombie
		if time.Now().After(deadline) {
			t.Fatal("a killed child still runs")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Wait()
	if Running(pid) {
		t.Fatal("a reaped child still runs")
	}
}
