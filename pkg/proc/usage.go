package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Usage is what a process has cost so far: CPU time in user and kernel
// mode, and bytes it caused to be written to storage.
type Usage struct {
	CPU     time.Duration
	Written int64
}

// UsageOf reads pid's costs: CPU time from the scheduler's per-thread
// counters (/proc/PID/task/*/schedstat, in nanoseconds: stat's clock ticks
// of 10 ms are too coarse to tell a quiet wait from one wake-up a second),
// bytes written from /proc/PID/io. Threads that have ended are not counted;
// Go keeps its threads. Reading another user's io file needs privileges;
// lm reads its own children.
func UsageOf(pid int) (Usage, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	tasks, err := os.ReadDir(dir + "/task")
	if err != nil {
		return Usage{}, err
	}
	var u Usage
	for _, task := range tasks {
		data, err := os.ReadFile(dir + "/task/" + task.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended while we read
		}
		fields := strings.Fields(string(data))
		if len(fields) == 0 {
			return Usage{}, fmt.Errorf("%s/task/%s/schedstat: empty", dir, task.Name())
		}
		ns, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return Usage{}, fmt.Errorf("%s/task/%s/schedstat: %w", dir, task.Name(), err)
		}
		u.CPU += time.Duration(ns)
	}
	io, err := os.ReadFile(dir + "/io")
	if err != nil {
		return Usage{}, err
	}
	for line := range strings.Lines(string(io)) {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			if u.Written, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
				return Usage{}, fmt.Errorf("%s/io: %w", dir, err)
			}
		}
	}
	return u, nil
}

// Sub is the cost between an earlier reading and this one.
func (u Usage) Sub(earlier Usage) Usage {
	return Usage{CPU: u.CPU - earlier.CPU, Written: u.Written - earlier.Written}
}
