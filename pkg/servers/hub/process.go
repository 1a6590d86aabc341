package hub

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"lmtool.dev/lm/pkg/servers"
)

// stopGrace is how long a child has between SIGTERM and SIGKILL.
const stopGrace = 3 * time.Second

// logRotateAt is the size at which a server's stderr log is moved aside.
const logRotateAt = 1 << 20

// process is one running stdio child: its pipes, its stderr (kept in a
// ring for error messages and appended to $LM_HOME/servers/NAME.log), and
// its exit.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *ring
	exited chan struct{} // closed when the process has been waited for
	err    error         // its exit status, once exited is closed
}

func spawn(home, name string, s *servers.Server, scrub *servers.Scrubber) (*process, error) {
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Env = os.Environ()
	for k, v := range s.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = childAttrs()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, stdin: stdin, stdout: stdout, stderr: &ring{max: 8 << 10}, exited: make(chan struct{})}
	log, err := openLog(servers.LogPath(home, name))
	if err != nil {
		return nil, err
	}
	stderr := &scrubbedLines{scrub: scrub, w: io.MultiWriter(p.stderr, log)}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", s.Command, err)
	}
	go func() {
		p.err = cmd.Wait()
		stderr.flush()
		log.Close()
		close(p.exited)
	}()
	return p, nil
}

func openLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create the log directory: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Size() > logRotateAt {
		os.Rename(path, path+".1")
	}
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
}

// terminate stops the whole process group: SIGTERM, then SIGKILL after
// stopGrace, and waits for the child.
func (p *process) terminate() {
	p.stdin.Close()
	pgid := -p.cmd.Process.Pid
	select {
	case <-p.exited:
	default:
		syscall.Kill(pgid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(stopGrace):
		}
	}
	// Grandchildren (node under npx) may outlive the leader: the group
	// gets SIGKILL whatever the leader did.
	syscall.Kill(pgid, syscall.SIGKILL)
	<-p.exited
}

// exitText describes how the process ended.
func (p *process) exitText() string {
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by " + unix.SignalName(ws.Signal())
		}
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	if p.err != nil {
		return p.err.Error()
	}
	return "exit status 0"
}

// scrubbedLines passes whole lines to w with secret values hidden, so a
// child that prints its environment leaks nothing into its log or status.
// Lines are held until their newline (or the child's exit), so a value
// written in pieces is still caught.
type scrubbedLines struct {
	scrub *servers.Scrubber
	w     io.Writer
	mu    sync.Mutex
	buf   []byte
}

func (s *scrubbedLines) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	if i := bytes.LastIndexByte(s.buf, '\n'); i >= 0 {
		s.w.Write([]byte(s.scrub.Scrub(string(s.buf[:i+1]))))
		s.buf = append(s.buf[:0], s.buf[i+1:]...)
	}
	// A line that never ends is passed on once it is long, unscrubbed only
	// where a value straddles the cut.
	if len(s.buf) > 64<<10 {
		s.w.Write([]byte(s.scrub.Scrub(string(s.buf))))
		s.buf = s.buf[:0]
	}
	return len(p), nil
}

// flush passes on an unfinished last line.
func (s *scrubbedLines) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) > 0 {
		s.w.Write([]byte(s.scrub.Scrub(string(s.buf))))
		s.buf = nil
	}
}

// ring keeps the last max bytes written to it.
type ring struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	if over := len(r.buf) - r.max; over > 0 {
		r.buf = r.buf[over:]
	}
	return len(p), nil
}

// tail is the last n lines.
func (r *ring) tail(n int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	lines := strings.Split(strings.TrimRight(string(r.buf), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}
