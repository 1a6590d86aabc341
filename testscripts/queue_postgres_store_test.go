package testscripts

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lmtool.dev/lm/pkg/queue/pgstore"
	"lmtool.dev/lm/pkg/queue/pgstore/pgtest"
)

// psql finds PostgreSQL's client, which restores an export.
func psql(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("psql"); err == nil {
		return p
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/psql")
	if len(found) == 0 {
		t.Fatal("PostgreSQL is installed without psql")
	}
	return found[len(found)-1]
}

// restoreExport restores an export lm store backup wrote into the
// database at url with psql, as the README says, and returns what psql
// printed.
func restoreExport(t *testing.T, file, url string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(psql(t), "-X", "-q", "-v", "ON_ERROR_STOP=1", "--single-transaction", "-f", file, url)
	return cmd.CombinedOutput()
}

// sqlExec runs statements on the database at url, as a person with psql
// would, to damage it on purpose.
func sqlExec(t *testing.T, url string, statements ...string) {
	t.Helper()
	ctx := context.Background()
	conn := pgtest.Connect(t, url)
	for _, s := range statements {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestPostgresStoreCommands: with the queue in a database whose password
// comes from lm's secrets, lm store info says where it is (password
// masked), its schema and counts; lm store check passes a sound database
// and names each broken invariant of a damaged one (exit 8); lm store
// backup writes the local store and an export of the queue that psql
// restores into another database, identical. No output, message or file
// shows the password, and no other program is run with the URL.
func TestPostgresStoreCommands(t *testing.T) {
	const secret = "store-cmd-pw-Zk91"
	cluster, url := teamCluster(t)
	env := teamHomeWithSecret(t, url, secret)
	// A program named like PostgreSQL's tools, first in PATH, leaves a
	// mark if lm ever hands the URL to one.
	fake := t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	for _, name := range []string{"pg_dump", "psql", "pg_dumpall"} {
		script := "#!/bin/sh\necho \"$0 $*\" >> " + marker + "\n"
		if err := os.WriteFile(filepath.Join(fake, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + fake + ":" + strings.TrimPrefix(kv, "PATH=")
		}
	}
	noSecret := func(what, out string) {
		t.Helper()
		if strings.Contains(out, secret) {
			t.Errorf("%s shows the password: %s", what, out)
		}
	}
	runLMEnv(t, env, "", "queue", "config", "default_wait_seconds=0")
	runLMEnv(t, env, "\"first\"\n\"second\"\n\"third\"\n", "queue", "add", "--jsonl")
	runLMEnv(t, env, "", "queue", "next", "--agent-id", "worker")

	out, _ := runLMEnv(t, env, "", "store", "info")
	noSecret("lm store info", out)
	var info struct {
		Path  string `json:"path"`
		Queue struct {
			Backend, Where, Identity string
			Schema                   int   `json:"schema_version"`
			Pending                  int   `json:"pending_count"`
			Consumed                 int   `json:"consumed_count"`
			Agents                   int   `json:"agents"`
			Events                   int   `json:"events_kept"`
			Size                     int64 `json:"size_bytes"`
		} `json:"queue"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatal(err)
	}
	q := info.Queue
	if q.Backend != "postgres" || !strings.Contains(q.Where, ":xxxxx@") || q.Schema != pgstore.SchemaVersion || q.Identity == "" ||
		q.Pending != 2 || q.Consumed != 1 || q.Agents != 1 || q.Events == 0 || q.Size == 0 || !strings.HasSuffix(info.Path, "lm.db") {
		t.Errorf("lm store info: %s", out)
	}
	table, _ := runLMEnv(t, env, "", "store", "info", "-o", "table")
	noSecret("lm store info -o table", table)
	if !strings.Contains(table, ":xxxxx@") || !strings.Contains(table, "PostgreSQL") {
		t.Errorf("lm store info -o table: %s", table)
	}

	if out, code := runLMEnv(t, env, "", "store", "check", "-r", "--jq", `"\(.ok) \(.queue.ok) \(.queue.problems | length)"`); code != 0 || out != "true true 0\n" {
		t.Errorf("lm store check on a sound database: exit %d: %s", code, out)
	}

	// The backup: the local store, and the queue as SQL that psql restores.
	dir := t.TempDir()
	out, _ = runLMEnv(t, env, "", "store", "backup", filepath.Join(dir, "lm.db"))
	noSecret("lm store backup", out)
	var backup struct {
		File  string
		Queue struct {
			File string
			Rows map[string]int64
		}
	}
	if err := json.Unmarshal([]byte(out), &backup); err != nil {
		t.Fatal(err)
	}
	if backup.File != filepath.Join(dir, "lm.db") || backup.Queue.File != backup.File+".queue.sql" || backup.Queue.Rows["lm_queue_items"] != 3 {
		t.Errorf("lm store backup: %s", out)
	}
	// The local part is the store lm.db was, whole: its own check passes.
	if out, code := runLMEnv(t, lmEnv(t.TempDir()), "", "--store", backup.File, "store", "check", "-r", "--jq", ".ok"); code != 0 || out != "true\n" {
		t.Errorf("lm store check of the local store's copy: exit %d: %s", code, out)
	}
	export, err := os.ReadFile(backup.Queue.File)
	if err != nil {
		t.Fatal(err)
	}
	noSecret("the export", string(export))
	if fi, _ := os.Stat(backup.Queue.File); fi.Mode().Perm() != 0o600 {
		t.Errorf("the export is %v, readable by others", fi.Mode().Perm())
	}
	if _, stderr, code := lmResult(t, env, "", "store", "backup", filepath.Join(dir, "lm.db")); code != 4 || !strings.Contains(stderr, "--force") {
		t.Errorf("a backup over an existing one: exit %d: %s", code, stderr)
	}
	// The local copy refused after the export was written: no half backup
	// is left, so the same command runs once its cause is mended.
	halfExport := filepath.Join(dir, "half.sql")
	if _, stderr, code := lmResult(t, env, "", "store", "backup", filepath.Join(dir, "lm.db"), "--queue-file", halfExport); code != 4 {
		t.Errorf("a backup whose local copy exists: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(halfExport); err == nil {
		t.Error("a refused backup left its queue export behind")
	}
	if ran, err := os.ReadFile(marker); err == nil {
		t.Fatalf("lm ran PostgreSQL's tools: %s", ran)
	}

	restored := cluster.URL(t)
	restore := func(into string) ([]byte, error) { return restoreExport(t, backup.Queue.File, into) }
	// A database lm never migrated: info says so, check cannot judge it.
	other := teamEnv(t.TempDir(), restored)
	if out, _ := runLMEnv(t, other, "", "store", "info", "-r", "--jq", `"\(.queue.schema_version) \(.queue.binary_schema_version)"`); out != fmt.Sprintf("0 %d\n", pgstore.SchemaVersion) {
		t.Errorf("lm store info on a database without lm's schema: %q", out)
	}
	if _, stderr, code := lmResult(t, other, "", "store", "check"); code != 6 || !strings.Contains(stderr, "lm store migrate") {
		t.Errorf("lm store check on a database without lm's schema: exit %d: %s", code, stderr)
	}
	// Restoring there is refused, and writes nothing.
	if msg, err := restore(restored); err == nil || !strings.Contains(string(msg), "lm_schema") {
		t.Errorf("restoring into a database without lm's schema: %v %s", err, msg)
	}
	runLMEnv(t, other, "", "store", "migrate")
	runLMEnv(t, other, "", "queue", "add", "replaced by the restore")
	if msg, err := restore(restored); err != nil {
		t.Fatalf("psql restoring the export: %v %s", err, msg)
	}
	list := func(env []string) string {
		out, _ := runLMEnv(t, env, "", "queue", "list", "--status", "all")
		return out
	}
	if a, b := list(env), list(other); a != b {
		t.Errorf("the restored queue differs:\n%s\nfrom\n%s", b, a)
	}
	status := `"\(.store_id) \(.queue.pending_count) \(.queue.consumed_count)"`
	if a, _ := runLMEnv(t, env, "", "queue", "status", "-r", "--jq", status); a != func() string { b, _ := runLMEnv(t, other, "", "queue", "status", "-r", "--jq", status); return b }() {
		t.Errorf("the restored queue's identity or counts differ")
	}
	if out, code := runLMEnv(t, other, "", "store", "check", "-r", "--jq", ".queue.ok"); code != 0 || out != "true\n" {
		t.Errorf("lm store check on the restored database: exit %d: %s", code, out)
	}
	// The restored queue carries on: its events continue the sequence.
	runLMEnv(t, other, "", "queue", "add", "after the restore")

	// Damage each invariant the check promises to see.
	// (A row inserted behind lm's back is one its counters do not count.)
	sqlExec(t, url,
		"UPDATE lm_queue_items SET consumed_by = '' WHERE status = 'consumed'",
		"INSERT INTO lm_queue_items (id, content, status, created_at, updated_at, ord, consumer) VALUES ('01BROKEN', 'x', 'pending', now(), now(), 99, '[1]')",
		"UPDATE lm_queue_items SET ord = 7 WHERE status = 'pending'",
		"INSERT INTO lm_queue_events (id, type, at, data) VALUES (-1, 'instruction.created', now(), '{}')",
		"UPDATE lm_queue_agents SET agent = '{\"agent_id\": \"someone else\"}'",
		"DELETE FROM lm_queue_counts WHERE slot = 15",
	)
	out, stderr, code := lmResult(t, env, "", "store", "check")
	noSecret("lm store check on a damaged database", out+stderr)
	if code != 8 {
		t.Errorf("lm store check on a damaged database: exit %d: %s %s", code, out, stderr)
	}
	for _, want := range []string{
		"a consumed instruction lacks its agent or time",
		"pending instructions share an order: 7:",
		"the counters disagree with what is stored",
		"an event's id is outside those transactions gave",
		"an agent's record names another agent: worker",
		"a pending instruction carries a consumer: 01BROKEN",
		"instruction 01BROKEN cannot be read",
		"lm_queue_counts must hold one row per slot (0 to 15): 15 rows",
		"the events counted disagree with those stored",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lm store check does not report %q: %s", want, out)
		}
	}
}

// TestStoreBackupQueueFileNeedsADatabase: --queue-file names the export of
// a queue database; with the queue in the local store it is refused.
func TestStoreBackupQueueFileNeedsADatabase(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	_, stderr, code := lmResult(t, lmEnv(home), "", "store", "backup", filepath.Join(dir, "b.db"), "--queue-file", filepath.Join(dir, "q.sql"))
	if code != 2 || !strings.Contains(stderr, "local store") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.db")); err == nil {
		t.Error("the refused backup wrote the local store's copy")
	}
}
