// Package pgtest runs a private PostgreSQL cluster for tests: initdb in a
// temporary directory, a server that listens only on a unix socket there,
// and a fresh database per test. A test package calls [Main] from TestMain
// so the cluster stops when its tests end.
//
// Without PostgreSQL installed the tests that need it skip, unless
// LM_REQUIRE_POSTGRES=1, which makes them fail (CI sets it).
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
)

var (
	once    sync.Once
	cluster *Cluster
	failure error
	dbs     atomic.Int64
)

// Cluster is a running private PostgreSQL server.
type Cluster struct {
	dir    string // data directory's parent, holding the socket
	bin    string
	cred   *syscall.Credential
	socket string
	opts   string // the server's options, for every start
}

// Main runs a package's tests and stops the cluster after them.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Bin finds PostgreSQL's server programs (initdb, pg_ctl): Debian keeps
// them out of PATH, under /usr/lib/postgresql/VERSION/bin.
func Bin() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(p), nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(found) == 0 {
		return "", fmt.Errorf("PostgreSQL is not installed (no pg_ctl in PATH or /usr/lib/postgresql/*/bin)")
	}
	sort.Strings(found)
	return filepath.Dir(found[len(found)-1]), nil
}

// URL returns the URL of a new, empty database in the package's shared
// cluster, starting it on first use (see [Main]).
func URL(t testing.TB) string {
	t.Helper()
	once.Do(func() { cluster, failure = Start() })
	unavailable(t, failure)
	return cluster.URL(t)
}

// Own starts a cluster for the calling test alone, stopped when it ends:
// for packages whose TestMain cannot call [Main].
func Own(t testing.TB) *Cluster {
	t.Helper()
	c, err := Start()
	unavailable(t, err)
	t.Cleanup(c.Stop)
	return c
}

// unavailable skips the test when PostgreSQL could not start, or fails it
// when LM_REQUIRE_POSTGRES=1.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("LM_REQUIRE_POSTGRES") == "1" {
		t.Fatalf("PostgreSQL: %v", err)
	}
	t.Skipf("PostgreSQL: %v (LM_REQUIRE_POSTGRES=1 makes this a failure)", err)
}

// URL returns the URL of a new, empty database in the cluster.
func (c *Cluster) URL(t testing.TB) string {
	t.Helper()
	url, err := c.Database()
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// Database creates a new, empty database and returns its URL.
func (c *Cluster) Database() (string, error) {
	name := fmt.Sprintf("lm_test_%d", dbs.Add(1))
	conn, err := pgx.Connect(context.Background(), c.url("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return c.url(name), nil
}

// Restart stops the cluster and starts it again, as a database restart
// under load does.
func (c *Cluster) Restart(t testing.TB) {
	t.Helper()
	// The log file keeps the server's output off pg_ctl's, which the
	// server would otherwise hold open for as long as it runs.
	if err := c.ctl("restart", "-m", "fast", "-w", "-l", filepath.Join(c.dir, "log")); err != nil {
		t.Fatal(err)
	}
}

// Durable makes every commit to the database at url reach the log on disk
// before it is acknowledged, as in a production database: the cluster
// runs with synchronous_commit off for speed, which a crash ([Cluster.Down])
// turns into acknowledged commits lost.
func Durable(t testing.TB, url string) {
	t.Helper()
	ctx := context.Background()
	conn := Connect(t, url)
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" SET synchronous_commit = on"); err != nil {
		t.Fatal(err)
	}
}

// Connect opens a connection to the database at url, closed when the test
// ends: for a test that reads or changes the database behind lm's back.
func Connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Down stops the server at once, as a crash or a failover does, keeping
// its files for [Cluster.Up]: a test sees what clients meet meanwhile.
func (c *Cluster) Down(t testing.TB) {
	t.Helper()
	if err := c.ctl("stop", "-m", "immediate", "-w"); err != nil {
		t.Fatal(err)
	}
}

// Up starts the server [Cluster.Down] stopped.
func (c *Cluster) Up(t testing.TB) {
	t.Helper()
	if err := c.ctl("start", "-w", "-l", filepath.Join(c.dir, "log"), "-o", c.opts); err != nil {
		t.Fatal(err)
	}
}

// Stop stops the shared cluster, if one runs, and removes its files.
func Stop() {
	if cluster != nil {
		cluster.Stop()
		cluster = nil
	}
}

// Stop stops the cluster and removes its files.
func (c *Cluster) Stop() {
	c.ctl("stop", "-m", "immediate", "-w")
	os.RemoveAll(c.dir)
}

func (c *Cluster) url(db string) string {
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/" + db, RawQuery: "host=" + url.QueryEscape(c.socket)}
	return u.String()
}

// Start makes and starts a cluster in a new temporary directory. As root
// it runs the server as the postgres user, since initdb refuses to run as
// root.
func Start() (*Cluster, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	root := os.Geteuid() == 0
	base := os.TempDir()
	if root && !traversable(base) {
		// The server runs as another user, who must reach its directory.
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "lm-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, bin: bin, socket: dir}
	if root {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root and there is no postgres user to run the server as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := c.command("initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	c.opts = fmt.Sprintf("-c listen_addresses='' -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300", dir)
	if err := c.ctl("start", "-w", "-l", filepath.Join(dir, "log"), "-o", c.opts); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%v %s", err, log)
	}
	return c, nil
}

// traversable says whether every user may pass through dir and each
// directory above it.
func traversable(dir string) bool {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

func (c *Cluster) command(prog string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.bin, prog), args...)
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd
}

func (c *Cluster) ctl(verb string, args ...string) error {
	args = append([]string{verb, "-D", filepath.Join(c.dir, "data")}, args...)
	if out, err := c.command("pg_ctl", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl %s: %v: %s", verb, err, out)
	}
	return nil
}
