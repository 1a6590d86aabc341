// Package keyringtest gives a test a real OS keyring of its own: a private
// D-Bus session bus with gnome-keyring's Secret Service on it. .ci/run
// installs them (dbus-daemon, gnome-keyring) and sets LM_REQUIRE_KEYRING=1,
// so there a missing daemon fails the test instead of skipping it.
package keyringtest

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// Start runs the bus and the Secret Service, points the test's
// DBUS_SESSION_BUS_ADDRESS at them, and stops both when the test ends.
func Start(t testing.TB) {
	t.Helper()
	Need(t, "dbus-daemon", "gnome-keyring-daemon")
	dir := t.TempDir()
	bus := exec.Command("dbus-daemon", "--session", "--nofork", "--print-address=1",
		"--address=unix:path="+filepath.Join(dir, "bus"))
	out, err := bus.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	run(t, bus)
	// The bus prints its address once it listens.
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	addr = strings.TrimSpace(addr)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)

	// gnome-keyring keeps its keyrings under HOME and its control socket
	// under XDG_RUNTIME_DIR: both private to the test. --unlock creates
	// the login keyring with the password on stdin, unlocked.
	home, runtime := filepath.Join(dir, "home"), filepath.Join(dir, "run")
	for _, d := range []string{home, runtime} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	keyring := exec.Command("gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets")
	keyring.Env = append(os.Environ(), "HOME="+home, "XDG_RUNTIME_DIR="+runtime, "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"))
	keyring.Stdin = strings.NewReader("test-password")
	run(t, keyring)
	waitForSecretService(t, addr)
}

// NoBus points the test's DBUS_SESSION_BUS_ADDRESS at a socket that does
// not exist: a machine without a desktop session.
func NoBus(t testing.TB) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "no-bus"))
}

// SilentBus points the test's DBUS_SESSION_BUS_ADDRESS at a socket that
// accepts connections and never answers: a wedged bus.
func SilentBus(t testing.TB) {
	sock := filepath.Join(t.TempDir(), "bus")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { l.Close() })
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+sock)
}

// run starts a daemon that the test's end stops. Its stderr (warnings
// about fd limits and the like) is shown only when the test failed.
func run(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("%s's stderr:\n%s", filepath.Base(cmd.Path), &stderr)
		}
	})
}

// Need skips the test unless the programs are installed, or fails it when
// LM_REQUIRE_KEYRING=1.
func Need(t testing.TB, programs ...string) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			if os.Getenv("LM_REQUIRE_KEYRING") == "1" {
				t.Fatalf("LM_REQUIRE_KEYRING=1 but %s is not installed", p)
			}
			t.Skipf("%s is not installed (apt-get install dbus-daemon gnome-keyring libsecret-tools; LM_REQUIRE_KEYRING=1 makes this a failure)", p)
		}
	}
}

// waitForSecretService waits until the Secret Service owns its name.
func waitForSecretService(t testing.TB, addr string) {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatalf("connect to the test's bus: %v", err)
	}
	defer conn.Close()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var owned bool
		if err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, "org.freedesktop.secrets").Store(&owned); err != nil {
			t.Fatalf("ask the test's bus: %v", err)
		}
		if owned {
			return
		}
	}
	t.Fatal("gnome-keyring-daemon did not provide the Secret Service within 10s")
}
