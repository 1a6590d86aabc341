package testscripts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"
)

// lmPath is the lm binary the tests run, for clients that start it.
func lmPath(t *testing.T) string {
	t.Helper()
	lm, err := exec.LookPath("lm")
	if err != nil {
		t.Fatal(err)
	}
	return lm
}

// nodeClient runs a client script (args[0], with its arguments) under node
// in dir against the store in home, and decodes each line it prints as a
// T. A failed run fails the test with the client's stderr.
func nodeClient[T any](t *testing.T, dir, home string, args ...string) []T {
	t.Helper()
	cmd := exec.Command("node", args...)
	cmd.Dir, cmd.Env = dir, lmEnv(home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var lines []T
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var line T
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		lines = append(lines, line)
	}
	return lines
}
