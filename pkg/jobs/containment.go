package jobs

import (
	"log/slog"
	"path/filepath"
	"syscall"
	"time"

	"lmtool.dev/lm/pkg/cgroup"
	"lmtool.dev/lm/pkg/op"
)

// How lm keeps hold of every process of a job, to end them all even when
// the job's supervisor was killed: a job record's containment.
const (
	// InCgroup: the job runs in a cgroup v2 of its own. The kernel keeps
	// every descendant in it, whatever session or group it moves to, and
	// ends them all at once.
	InCgroup = "cgroup"
	// Recorded: the job's process group, and the processes below its
	// supervisor as it last recorded them (every 250 ms). Used where the
	// system gives lm no cgroup.
	Recorded = "recorded"
)

// cgroupSwitch turns cgroups off (off) or leaves lm to use them where the
// system allows it (auto, the default).
const cgroupSwitch = "LM_JOBS_CGROUP"

func cgroupsWanted(env *op.Env) (bool, error) {
	switch v := env.Getenv(cgroupSwitch); v {
	case "", "auto":
		return true, nil
	case "off":
		return false, nil
	default:
		return false, op.Errorf(op.KindInvalid, "%s is %q: want auto (a cgroup per job where the system allows it) or off", cgroupSwitch, v)
	}
}

// newCgroup gives the job a cgroup of its own where it is wanted and the
// system allows it, and says why not in the supervisor's log otherwise.
func newCgroup(env *op.Env, log *slog.Logger, id string) *cgroup.Group {
	if wanted, _ := cgroupsWanted(env); !wanted {
		log.Info("cgroups are off: the job's processes are recorded instead", "switch", cgroupSwitch)
		return nil
	}
	g, err := cgroup.New(cgroupName(id))
	if err != nil {
		log.Info("no cgroup for the job: its processes are recorded instead", "reason", err)
		return nil
	}
	return &g
}

// signal sends sig to every process of the job that lm can find: all in
// its cgroup, else its process group. Each gets it once: a second SIGTERM
// means "stop now" to many programs. A job of an earlier boot has no
// processes left, and its pid may now be anyone's group.
func (j Job) signal(sig syscall.Signal) {
	if !j.sameBoot() {
		return
	}
	if g, ok := j.cgroup(); ok && g.Signal(sig) == nil {
		return
	}
	// Group 1 would be kill(-1): every process lm may signal. No job's
	// child is pid 1, whatever its record says.
	if j.PID > 1 {
		syscall.Kill(-j.PID, sig)
	}
}

// removeCgroup deletes the job's cgroup once the processes just killed
// have exited.
func (j Job) removeCgroup() {
	if g, ok := j.cgroup(); ok {
		g.Remove(2 * time.Second)
	}
}

// cgroup is the job's cgroup, as its record names it. Only the one lm
// made for this job (see newCgroup) is: its processes are killed and the
// cgroups below it removed, so a record naming any other (the lm
// process's own, a parent, another job's) names nothing.
func (j Job) cgroup() (cgroup.Group, bool) {
	if j.Cgroup == "" || filepath.Clean(j.Cgroup) != j.Cgroup || filepath.Base(j.Cgroup) != cgroupName(j.ID) {
		return cgroup.Group{}, false
	}
	g, err := cgroup.At(j.Cgroup)
	return g, err == nil
}

// cgroupName is the name of job id's cgroup.
func cgroupName(id string) string { return "lm-" + id }
