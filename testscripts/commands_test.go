package testscripts

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"lmtool.dev/lm/pkg/proc"
)

// commands are the custom script commands.
var commands = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"waitfile":  waitFile,
	"waitmatch": waitMatch,
	"holdlock":  holdLock,
	"exits":     exits,
	"jsonlines": jsonLines,
	"fakemodel": fakeModel,
	"gone":      gone,
	"damage":    damage,
	"bymodes":   byModes,
}

// bymodes CMD ARGS... runs a command as file modes bind it: tests run as
// root, who reads and enters any directory, so there it runs without the
// capabilities that allow that (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH).
// Its output is the script's stdout and stderr, as with exec.
func byModes(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: bymodes CMD ARGS...")
	}
	if os.Geteuid() == 0 {
		args = append([]string{"setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"}, args...)
	}
	err := ts.Exec(args[0], args[1:]...)
	switch {
	case err != nil && !neg:
		ts.Fatalf("%s: %v", args[0], err)
	case err == nil && neg:
		ts.Fatalf("%s: unexpected success", args[0])
	}
}

// damage FILE TEXT replaces the byte after every occurrence of TEXT in FILE
// with 0x01, as a flipped bit on disk would: a record that no longer
// decodes.
func damage(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: damage FILE TEXT")
	}
	path := ts.MkAbs(args[0])
	data, err := os.ReadFile(path)
	ts.Check(err)
	n := 0
	for i := 0; ; n++ {
		j := bytes.Index(data[i:], []byte(args[1]))
		if j < 0 || i+j+len(args[1]) >= len(data) {
			break
		}
		i += j + len(args[1])
		data[i] = 1
	}
	if n == 0 {
		ts.Fatalf("%s does not contain %q", args[0], args[1])
	}
	ts.Check(os.WriteFile(path, data, 0o600))
}

// fakemodel FILE serves Ollama's /api/chat on loopback until the script
// ends, answering each request with the next line of FILE, and points
// LM_MODEL and LM_MODEL_URL at it.
func fakeModel(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fakemodel FILE")
	}
	replies := strings.Split(strings.TrimRight(ts.ReadFile(args[0]), "\n"), "\n")
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if len(replies) == 0 {
			http.Error(w, `{"error":"fakemodel: no more replies"}`, http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"message": map[string]any{"role": "assistant", "content": replies[0]}, "done": true})
		replies = replies[1:]
	}))
	ts.Defer(srv.Close)
	ts.Setenv("LM_MODEL", "fake")
	ts.Setenv("LM_MODEL_URL", srv.URL)
}

// jsonlines FILE checks that every line of FILE (or stdout) is one JSON value.
func jsonLines(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: jsonlines FILE")
	}
	for i, line := range strings.Split(strings.TrimRight(ts.ReadFile(args[0]), "\n"), "\n") {
		if !json.Valid([]byte(line)) {
			ts.Fatalf("%s line %d is not JSON: %q", args[0], i+1, line)
		}
	}
}

// exits CODE PROG [ARGS...] runs a program like exec and checks its exact
// exit status, keeping its stdout and stderr for the next commands.
func exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = exit.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// gone PIDFILE... waits up to 10 s until every process whose pid a file
// holds (one or more, a line each) has exited (a zombie has: it runs no more). One still running
// then fails the script, and is killed so that it does not outlive it.
func gone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: gone PIDFILE...")
	}
	pids := map[int]string{}
	for _, file := range args {
		for _, field := range strings.Fields(ts.ReadFile(file)) {
			pid, err := strconv.Atoi(field)
			ts.Check(err)
			pids[pid] = file
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for pid, file := range pids {
		for proc.Running(pid) {
			if time.Now().After(deadline) {
				for pid := range pids {
					syscall.Kill(pid, syscall.SIGKILL)
				}
				ts.Fatalf("process %d (%s) is still running", pid, file)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
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

// waitmatch FILE REGEXP [TIMEOUT] waits until FILE's content matches
// REGEXP, for output a background command is still writing.
func waitMatch(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: waitmatch FILE REGEXP [TIMEOUT]")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	limit := 10 * time.Second
	if len(args) > 2 {
		limit, err = time.ParseDuration(args[2])
		ts.Check(err)
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(ts.MkAbs(args[0])); err == nil && re.Match(data) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.Fatalf("%s did not match %q within %s", args[0], args[1], limit)
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
