package jobs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/cgroup"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/proc"
	"lmtool.dev/lm/pkg/store"
)

// A job's record names its cgroup, and whoever reads a job whose
// supervisor is gone ends every process in it and removes it. A record
// naming another cgroup (written by anything that can write the store,
// or left over from another job) must end nothing there: only the cgroup
// lm made for that job, lm-ID, is the job's.
func TestARecordNamingAForeignCgroupEndsNothingThere(t *testing.T) {
	foreign, err := cgroup.New(fmt.Sprintf("victim-%d", os.Getpid()))
	if err != nil {
		t.Skipf("this system gives lm no cgroup v2 to write (%v): cgroups are tested where it does", err)
	}
	t.Cleanup(func() { foreign.Remove(5 * time.Second) })
	victim := bystander(t, nil)
	if err := os.WriteFile(filepath.Join(foreign.Dir, "cgroup.procs"), []byte(strconv.Itoa(victim.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	supervisor := goneSupervisor(t)

	env := newEnv(t)
	for _, cg := range []string{foreign.Dir, filepath.Join(foreign.Dir, "..", filepath.Base(foreign.Dir))} {
		readEndsFailed(t, env, Job{ID: "j_A1B2", State: Running, Argv: []string{"sleep", "300"}, CreatedAt: time.Now().UTC(),
			Supervisor: supervisor, Containment: InCgroup, Cgroup: cg})
		if !proc.Running(victim.Process.Pid) {
			t.Fatalf("a process in the cgroup %s a job's record named was killed", cg)
		}
		if _, err := os.Stat(foreign.Dir); err != nil {
			t.Fatalf("the cgroup %s a job's record named was removed: %v", cg, err)
		}
	}
}

// A record whose pid is 1 names no job's process group: signalling "group
// 1" would be kill(-1), every process lm may signal. Tried in a pid
// namespace of its own, where that is only the namespace's processes.
func TestARecordWithPIDOneSignalsNoOne(t *testing.T) {
	if os.Getenv("LM_JOBS_TEST_PIDNS") != "" {
		signalPIDOneInside(t)
		return
	}
	args := []string{"--pid", "--fork", "--mount-proc"}
	if os.Geteuid() != 0 {
		args = append([]string{"--user", "--map-root-user", "--mount"}, args...)
	}
	if err := exec.Command("unshare", append(args, "true")...).Run(); err != nil {
		if os.Getenv("LM_REQUIRE_MOUNTS") != "" {
			t.Fatalf("unshare %v: %v", args, err)
		}
		t.Skipf("no pid namespace of its own for the test (unshare %v: %v)", args, err)
	}
	cmd := exec.Command("unshare", append(args, os.Args[0], "-test.run=^TestARecordWithPIDOneSignalsNoOne$", "-test.v")...)
	cmd.Env = append(os.Environ(), "LM_JOBS_TEST_PIDNS=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("in a pid namespace: %v\n%s", err, out)
	}
}

// signalPIDOneInside runs as pid 1 of a pid namespace: a job's record
// whose supervisor is gone names pid 1, and reading the job must leave
// the namespace's other process running.
func signalPIDOneInside(t *testing.T) {
	if os.Getpid() != 1 {
		t.Fatalf("pid %d, want 1 in a namespace of its own", os.Getpid())
	}
	victim := bystander(t, nil)
	readEndsFailed(t, newEnv(t), Job{ID: "j_C3D4", State: Running, Argv: []string{"sleep", "300"}, CreatedAt: time.Now().UTC(),
		PID: 1, Supervisor: goneSupervisor(t), Containment: Recorded})
	if !proc.Running(victim.Process.Pid) {
		t.Fatal("reading a job whose record names pid 1 killed another process")
	}
}

// A job recorded in an earlier boot of the machine has nothing left
// running, whatever now has its pids: its supervisor's pid running again
// does not keep it "running", and reading it signals no process group —
// here a live process that took both pids stands for the reboot's reuse.
func TestAJobOfAnEarlierBootEndsNothingNow(t *testing.T) {
	if proc.BootID() == "" {
		t.Skip("this kernel does not name its boots")
	}
	victim := bystander(t, &syscall.SysProcAttr{Setpgid: true})
	env := newEnv(t)
	readEndsFailed(t, env, Job{ID: "j_E5F6", State: Running, Argv: []string{"sleep", "300"}, CreatedAt: time.Now().UTC(),
		PID: victim.Process.Pid, Supervisor: victim.Process.Pid, Boot: "an-earlier-boot", Containment: Recorded})
	if _, err := Stop(context.Background(), env, StopInput{ID: "j_E5F6"}); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if !proc.Running(victim.Process.Pid) {
		t.Fatal("reading or stopping a job of an earlier boot killed the process group that now has its pid")
	}
}

// bystander starts a process that reading or stopping the test's jobs
// must leave running; it ends with the test.
func bystander(t *testing.T, attr *syscall.SysProcAttr) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// goneSupervisor is the pid of a process that has exited, so that
// reading a job it supervised ends the job.
func goneSupervisor(t *testing.T) int {
	t.Helper()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	return gone.Process.Pid
}

func newEnv(t *testing.T) *op.Env {
	home := t.TempDir()
	return &op.Env{Home: home, Store: store.New(filepath.Join(home, "lm.db"), 0), Now: time.Now, Caller: op.Person()}
}

// readEndsFailed stores record and reads it back, which must end the job
// as failed.
func readEndsFailed(t *testing.T, env *op.Env, record Job) {
	t.Helper()
	ctx := context.Background()
	if err := env.Store.Update(ctx, func(tx *bolt.Tx) error { return put(tx, record) }); err != nil {
		t.Fatal(err)
	}
	if out, err := Status(ctx, env, IDInput{ID: record.ID}); err != nil || out.Job.State != Failed {
		t.Fatalf("reading job %s: %+v %v, want failed", record.ID, out.Job, err)
	}
}
