package testscripts

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"

	"github.com/creack/pty"

	"lmtool.dev/lm/pkg/testkit"
)

// ontty [-merge] [-interrupt REGEXP] PROG [ARGS...] runs PROG as at a
// person's terminal: stdin and stdout on one pseudo-terminal (its
// controlling terminal), stderr on another (with -merge on the same one, in
// the order a person sees them), and copies what each shows to ontty's own
// stdout and stderr with "\r\n" turned back into "\n". With -interrupt it
// types Ctrl+C once PROG's stderr matches REGEXP. It exits with PROG's
// status (128+N for a signal N).
func ontty() int {
	fs := flag.NewFlagSet("ontty", flag.ContinueOnError)
	interrupt := fs.String("interrupt", "", "type Ctrl+C once stderr matches this `REGEXP`")
	merge := fs.Bool("merge", false, "stderr on the same terminal as stdout")
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: ontty [-merge] [-interrupt REGEXP] PROG [ARGS...]")
		return 2
	}
	var when *regexp.Regexp
	if *interrupt != "" {
		when = regexp.MustCompile(*interrupt)
	}
	term, termTTY, err := pty.Open()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ontty:", err)
		return 1
	}
	errPTY, errTTY := term, termTTY
	if !*merge {
		if errPTY, errTTY, err = pty.Open(); err != nil {
			fmt.Fprintln(os.Stderr, "ontty:", err)
			return 1
		}
	}
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = termTTY, termTTY, errTTY
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "ontty:", err)
		return 1
	}
	termTTY.Close()
	errTTY.Close()

	var out, stderr testkit.Buffer
	var copies sync.WaitGroup
	copies.Add(1)
	if !*merge {
		copies.Add(1)
		go func() { defer copies.Done(); io.Copy(&out, term) }()
	}
	go func() {
		defer copies.Done()
		buf := make([]byte, 4096)
		typed := false
		for {
			n, err := errPTY.Read(buf)
			stderr.Write(buf[:n])
			if when != nil && !typed && when.Match(stderr.Bytes()) {
				typed = true
				term.Write([]byte{3}) // Ctrl+C: the terminal signals the foreground group
			}
			if err != nil {
				return
			}
		}
	}()
	err = cmd.Wait()
	copies.Wait()
	crlf := []byte("\r\n")
	os.Stdout.Write(bytes.ReplaceAll(out.Bytes(), crlf, []byte("\n")))
	os.Stderr.Write(bytes.ReplaceAll(stderr.Bytes(), crlf, []byte("\n")))
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exit.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ontty:", err)
		return 1
	}
	return 0
}
