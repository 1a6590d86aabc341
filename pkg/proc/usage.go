package proc

import (
	"bytes"
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

// ticksPerSecond is the kernel's USER_HZ, the unit of /proc/PID/stat's
// times; it is 100 on every Linux architecture lm builds for.
const ticksPerSecond = 100

// UsageOf reads pid's costs from /proc/PID/stat and /proc/PID/io. Reading
// another user's io file needs privileges; lm reads its own children.
func UsageOf(pid int) (Usage, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Usage{}, err
	}
	i := bytes.LastIndexByte(stat, ')')
	fields := strings.Fields(string(stat[i+1:]))
	// After the command name: state is the 1st field, utime the 12th and
	// stime the 13th.
	if i < 0 || len(fields) < 13 {
		return Usage{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return Usage{}, fmt.Errorf("/proc/%d/stat: bad CPU times", pid)
	}
	u := Usage{CPU: time.Duration(utime+stime) * time.Second / ticksPerSecond}
	io, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return Usage{}, err
	}
	for line := range strings.Lines(string(io)) {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			if u.Written, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
				return Usage{}, fmt.Errorf("/proc/%d/io: %w", pid, err)
			}
		}
	}
	return u, nil
}

// Sub is the cost between an earlier reading and this one.
func (u Usage) Sub(earlier Usage) Usage {
	return Usage{CPU: u.CPU - earlier.CPU, Written: u.Written - earlier.Written}
}
