package testscripts

import (
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// commands are the custom script commands.
var commands = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"waitfile": waitFile,
	"holdlock": holdLock,
}

// waitfile FILE [TIMEOUT] waits until FILE exists and is not empty.
func waitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: waitfile FILE [TIMEOUT]")
	}
	limit := 10 * time.Second
	if len(args) > 1 {
		d, err := time.ParseDuration(args[1])
		ts.Check(err)
		limit = d
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(ts.MkAbs(args[0])); err == nil && strings.TrimSpace(string(data)) != "" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.Fatalf("%s did not appear within %s", args[0], limit)
}

// holdlock FILE holds an exclusive flock on FILE until the script ends,
// as another process using the store would.
func holdLock(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: holdlock FILE")
	}
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_RDWR|os.O_CREATE, 0o600)
	ts.Check(err)
	ts.Check(syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	ts.Defer(func() { f.Close() })
}
