package client_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"lmtool.dev/lm/cli"
	"lmtool.dev/lm/pkg/registry"
)

// TestMain lets the tests run this binary as lm, behind a real terminal.
func TestMain(m *testing.M) {
	if os.Getenv("LM_TEST_AS_LM") == "1" {
		os.Exit(cli.Main(registry.Catalog()))
	}
	os.Exit(m.Run())
}

// TestAsksForMissingArgumentsOnATerminal drives `lm servers call` through a
// pty: the required arguments are asked for one by one, a wrong answer is
// asked again, and the call runs with the answers converted to numbers.
func TestAsksForMissingArgumentsOnATerminal(t *testing.T) {
	bin := everything(t)
	cmd := exec.Command(os.Args[0], "servers", "call", "get-sum", "--", bin)
	cmd.Env = append(os.Environ(), "LM_TEST_AS_LM=1", "LM_HOME="+filepath.Join(t.TempDir(), "lm"))
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	out := make(chan string, 64)
	go func() {
		r := bufio.NewReader(tty)
		var chunk []byte
		for {
			b, err := r.ReadByte()
			if err != nil { // EIO once the child exits
				out <- string(chunk)
				close(out)
				return
			}
			chunk = append(chunk, b)
			if b == '\n' || b == ' ' {
				out <- string(chunk)
				chunk = nil
			}
		}
	}()
	var seen strings.Builder
	waitFor := func(want string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for !strings.Contains(seen.String(), want) {
			select {
			case s, ok := <-out:
				if !ok {
					t.Fatalf("lm ended before %q:\n%s", want, seen.String())
				}
				seen.WriteString(s)
			case <-deadline:
				t.Fatalf("no %q within 30s:\n%s", want, seen.String())
			}
		}
	}
	waitFor("a (number: First number): ")
	tty.WriteString("one\n")
	waitFor(`"one" is not a number; try again`)
	waitFor("a (number: First number): ")
	tty.WriteString("40\n")
	waitFor("b (number: Second number): ")
	tty.WriteString("2\n")
	waitFor("The sum of 40 and 2 is 42.")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("lm exited with %v:\n%s", err, seen.String())
	}
}
