// Package gatewayd runs the gateway in the background: a detached process
// whose pid, address and log live in files under LM_HOME, so any shell can
// start, stop and inspect it, and a process that died leaves no record
// claiming it still serves. Its operations are `lm gateway start|stop|
// restart|status|logs` (ops.go), the person's on the command line only.
package gatewayd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/privatefile"
	"lmtool.dev/lm/pkg/proc"
)

// Files are where a gateway records itself.
type Files struct{ Dir string }

// Pid, State and Log are the file paths.
func (f Files) Pid() string   { return filepath.Join(f.Dir, "gateway.pid") }
func (f Files) State() string { return filepath.Join(f.Dir, "gateway.json") }
func (f Files) Log() string   { return filepath.Join(f.Dir, "gateway.log") }

// State describes a serving gateway.
type State struct {
	Pid       int       `json:"pid"`
	Addr      string    `json:"addr"`
	URL       string    `json:"url"`
	Store     string    `json:"store"`
	StartedAt time.Time `json:"started_at"`
}

// Record writes the pid and state files for the serving process; the
// returned function removes them (when they are still this process's).
func (f Files) Record(s State) (remove func(), err error) {
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", f.Dir, err)
	}
	// The pid file first: Start (and every reader) takes the state file
	// as the sign that the gateway is recorded, so both exist once it does.
	if err := privatefile.Write(f.Pid(), []byte(strconv.Itoa(s.Pid)+"\n")); err != nil {
		return nil, err
	}
	data, _ := json.MarshalIndent(s, "", "  ")
	if err := privatefile.Write(f.State(), append(data, '\n')); err != nil {
		os.Remove(f.Pid())
		return nil, err
	}
	return func() {
		// In the reverse order: no reader sees a state file without its
		// pid file.
		if cur, ok, _ := f.Running(); ok && cur.Pid == s.Pid {
			os.Remove(f.State())
			os.Remove(f.Pid())
		}
	}, nil
}

// Running returns the recorded gateway if its process is alive. Files left
// by a gateway that died are removed.
func (f Files) Running() (State, bool, error) {
	var s State
	data, err := os.ReadFile(f.State())
	if errors.Is(err, os.ErrNotExist) {
		return s, false, nil
	}
	if err != nil {
		return s, false, err
	}
	if err := json.Unmarshal(data, &s); err != nil || s.Pid <= 0 {
		return s, false, fmt.Errorf("%s is not a gateway state file", f.State())
	}
	if !proc.Running(s.Pid) {
		os.Remove(f.Pid())
		os.Remove(f.State())
		return s, false, nil
	}
	return s, true, nil
}

// Start launches `exe args…` detached (its own session, output appended to
// the log) and waits until it records itself as serving.
func (f Files) Start(ctx context.Context, exe string, args []string, timeout time.Duration) (State, error) {
	if s, ok, err := f.Running(); err != nil {
		return s, err
	} else if ok {
		return s, op.Errorf(op.KindConflict, "a gateway is already running (pid %d, %s)", s.Pid, s.URL).
			WithHint("use 'lm gateway restart', or 'lm gateway stop' first")
	}
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return State{}, err
	}
	logf, err := os.OpenFile(f.Log(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return State{}, fmt.Errorf("open gateway log: %w", err)
	}
	defer logf.Close()
	offset, _ := logf.Seek(0, io.SeekEnd)
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return State{}, fmt.Errorf("start gateway: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			return State{}, op.Errorf(op.KindUnavailable, "the gateway exited during start (%v): %s", err, strings.TrimSpace(logSince(f.Log(), offset))).
				WithHint("see 'lm gateway logs'")
		case <-deadline.C:
			cmd.Process.Signal(syscall.SIGTERM)
			return State{}, op.Errorf(op.KindTimeout, "the gateway did not start within %s", timeout).WithHint("see 'lm gateway logs'")
		case <-ctx.Done():
			cmd.Process.Signal(syscall.SIGTERM)
			return State{}, ctx.Err()
		case <-tick.C:
			if s, ok, _ := f.Running(); ok && s.Pid == cmd.Process.Pid {
				return s, nil
			}
		}
	}
}

// Stop sends SIGTERM to the recorded gateway and waits for it to exit,
// killing it if it outlives timeout.
func (f Files) Stop(ctx context.Context, timeout time.Duration) (State, error) {
	s, ok, err := f.Running()
	if err != nil {
		return s, err
	}
	if !ok {
		return s, op.Errorf(op.KindNotFound, "no gateway is running").WithHint("start one with 'lm gateway start'")
	}
	if err := syscall.Kill(s.Pid, syscall.SIGTERM); err != nil {
		return s, fmt.Errorf("stop gateway pid %d: %w", s.Pid, err)
	}
	deadline := time.Now().Add(timeout)
	for proc.Running(s.Pid) {
		if time.Now().After(deadline) {
			syscall.Kill(s.Pid, syscall.SIGKILL)
			break
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	f.Running() // clears the files if the process could not
	return s, nil
}

// RSS is the resident memory of pid in bytes (0 when unknown).
func RSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func logSince(path string, offset int64) string {
	file, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer file.Close()
	file.Seek(offset, io.SeekStart)
	data, _ := io.ReadAll(io.LimitReader(file, 4096))
	return string(data)
}
