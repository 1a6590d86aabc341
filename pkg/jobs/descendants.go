package jobs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"lmtool.dev/lm/pkg/privatefile"
	"lmtool.dev/lm/pkg/proc"
)

// recordEvery is how often a supervisor without a cgroup for its job
// refreshes the record of the job's processes. As the child subreaper it
// inherits every orphan of the job, so a process that left the job's group
// (setsid, a double fork, a daemon) is still below it; only one started
// within the last interval before the supervisor is killed can be missed.
// A cgroup misses none.
const recordEvery = 250 * time.Millisecond

func descendantsPath(home, id string) string { return filepath.Join(jobDir(home, id), "descendants") }

// recordDescendants keeps a record of every process below the supervisor
// (pid and start time) until done closes, so that when the supervisor is
// killed (and can end nothing) the reader that marks the job failed ends
// them from the record.
func recordDescendants(home, id string, done <-chan struct{}) {
	tick := time.NewTicker(recordEvery)
	defer tick.Stop()
	path := descendantsPath(home, id)
	var last []byte
	for {
		var record bytes.Buffer
		for _, p := range proc.Descendants(proc.All(), os.Getpid()) {
			fmt.Fprintf(&record, "%d %d\n", p.PID, p.Start)
		}
		if !bytes.Equal(record.Bytes(), last) {
			if privatefile.Write(path, record.Bytes()) == nil {
				last = record.Bytes()
			}
		}
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}

// endRecorded kills the recorded processes of a job whose supervisor is
// gone, and everything below them now. A pid that now names another process
// (its start time differs) is left alone.
func endRecorded(home, id string) {
	f, err := os.Open(descendantsPath(home, id))
	if err != nil {
		return
	}
	defer f.Close()
	all := proc.All()
	byPID := map[int]proc.Stat{}
	for _, s := range all {
		byPID[s.PID] = s
	}
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		var pid int
		var start uint64
		if _, err := fmt.Sscanf(lines.Text(), "%d %d", &pid, &start); err != nil || pid <= 1 {
			continue
		}
		s, ok := byPID[pid]
		if !ok || s.Start != start {
			continue
		}
		// Stop it first so it cannot fork while its tree is read.
		syscall.Kill(pid, syscall.SIGSTOP)
		for _, d := range proc.Descendants(proc.All(), pid) {
			syscall.Kill(d.PID, syscall.SIGKILL)
		}
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
