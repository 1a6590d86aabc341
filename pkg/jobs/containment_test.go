package jobs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	victim := exec.Command("sleep", "300")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
	if err := os.WriteFile(filepath.Join(foreign.Dir, "cgroup.procs"), []byte(strconv.Itoa(victim.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	// A supervisor that is gone, so that reading the job ends it.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	home := t.TempDir()
	env := &op.Env{Home: home, Store: store.New(filepath.Join(home, "lm.db"), 0), Now: time.Now}
	for _, cg := range []string{foreign.Dir, filepath.Join(foreign.Dir, "..", filepath.Base(foreign.Dir))} {
		record := Job{ID: "j_A1B2", State: Running, Argv: []string{"sleep", "300"}, CreatedAt: time.Now().UTC(),
			Supervisor: gone.Process.Pid, Containment: InCgroup, Cgroup: cg}
		if err := env.Store.Update(ctx, func(tx *bolt.Tx) error { return put(tx, record) }); err != nil {
			t.Fatal(err)
		}
		out, err := Status(ctx, env, IDInput{ID: "j_A1B2"})
		if err != nil || out.Job.State != Failed {
			t.Fatalf("the job whose supervisor is gone: %+v %v", out.Job, err)
		}
		if !proc.Running(victim.Process.Pid) {
			t.Fatalf("a process in the cgroup %s a job's record named was killed", cg)
		}
		if _, err := os.Stat(foreign.Dir); err != nil {
			t.Fatalf("the cgroup %s a job's record named was removed: %v", cg, err)
		}
	}
}
