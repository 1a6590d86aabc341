package hub

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"lmtool.dev/lm/pkg/cappedlog"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/servers"
)

// stopGrace is how long a child has between SIGTERM and SIGKILL.
const stopGrace = 3 * time.Second

// process is one running stdio child: its pipes, its stderr (kept in a
// ring for error messages and appended to $LM_HOME/servers/NAME.log), and
// its exit.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Reader // its messages, one a line, each at most maxMessageBytes
	stderr *ring
	exited chan struct{} // closed when the process has been waited for
	err    error         // its exit status, once exited is closed
	// oversized is set when the child wrote a line longer than
	// maxMessageBytes, for which it was killed.
	oversized atomic.Bool
}

// maxMessageBytes bounds one JSON-RPC message from a stdio child. The
// transport holds a line in memory until its newline: without a bound, a
// child that writes without ever ending its line (a bug, or a hostile
// package) takes the gateway's memory with it. Far above any real tool
// result (a large image, base64-encoded, is a few MiB).
const maxMessageBytes = 32 << 20

// lifelineScript starts a server's command as the leader of its own
// process group beside a watcher that kills the whole group once the
// gateway's end of the lifeline (fd 3) closes. The kernel closes it
// however the gateway ends, SIGKILL included, so neither the server nor
// anything it started (node under npx, a child of sh -c) outlives the
// gateway, even a process that ignores SIGTERM and never reads its stdin.
//
// Not the kernel's parent-death signal: it reaches only the direct child,
// not its group, and fires when the thread that forked the child exits,
// which a Go program does not control. The watcher is started in a
// subshell that exits at once, so it is no child of the server's (nothing
// to wait for); it ignores the SIGTERM a stop sends the group, so a
// gateway killed during the stop still takes the group with it, and holds
// none of the server's pipes, so the server's exit is seen at once. The
// server is exec'd: its pid and exit status are the child's own.
const lifelineScript = `( (trap '' TERM INT HUP; read -r _ <&3; kill -s KILL 0) </dev/null >/dev/null 2>&1 & )
exec "$@" 3<&-`

func spawn(home string, environ []string, name string, s *servers.Server, scrub *servers.Scrubber) (*process, error) {
	// Looked up here, as exec.Command would, so a missing command is an
	// error to report rather than a child that exits 127.
	path, err := exec.LookPath(s.Command)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Command, err)
	}
	cmd := exec.Command("/bin/sh", append([]string{"-c", lifelineScript, s.Command, path}, s.Args...)...)
	cmd.Env = op.ChildEnv(environ)
	for k, v := range s.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	lifeline, keep, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Command, err)
	}
	cmd.ExtraFiles = []*os.File{lifeline}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, errors.Join(err, lifeline.Close(), keep.Close())
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, errors.Join(err, lifeline.Close(), keep.Close())
	}
	p := &process{cmd: cmd, stdin: stdin, stderr: &ring{max: 8 << 10}, exited: make(chan struct{})}
	p.stdout = &boundedLines{r: stdout, max: maxMessageBytes, over: p.killOversized}
	size, err := logSize(home)
	if err != nil {
		return nil, errors.Join(err, lifeline.Close(), keep.Close())
	}
	log, err := cappedlog.Open(servers.LogPath(home, name), size, 1)
	if err != nil {
		return nil, errors.Join(err, lifeline.Close(), keep.Close())
	}
	stderr := &scrubbedLines{scrub: scrub, w: io.MultiWriter(p.stderr, log)}
	cmd.Stderr = stderr
	err = cmd.Start()
	lifeline.Close() // the child has its copy
	if err != nil {
		keep.Close()
		log.Close()
		return nil, fmt.Errorf("start %s: %w", s.Command, err)
	}
	go func() {
		p.err = cmd.Wait()
		// Whatever the server left in its group goes with the lifeline.
		keep.Close()
		stderr.flush()
		log.Close()
		close(p.exited)
	}()
	return p, nil
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

// killOversized ends a child whose line passed maxMessageBytes: what it
// writes next cannot be read as messages, and its group goes with it, as
// on a stop.
func (p *process) killOversized() {
	p.oversized.Store(true)
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

// exitText describes how the process ended.
func (p *process) exitText() string {
	if p.oversized.Load() {
		return fmt.Sprintf("killed: it wrote a message longer than %d MiB, the most the gateway reads", maxMessageBytes>>20)
	}
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

// boundedLines reads r, failing once a line runs past max bytes without
// its newline; over is called then, once.
type boundedLines struct {
	r    io.Reader
	max  int
	run  int // bytes since the last newline
	over func()
	err  error
}

var errMessageTooLong = errors.New("message too long")

func (b *boundedLines) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.r.Read(p)
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		b.run = n - i - 1
	} else {
		b.run += n
	}
	if b.run > b.max {
		b.err = fmt.Errorf("%w: more than %d bytes without a newline", errMessageTooLong, b.max)
		b.over()
		return 0, b.err
	}
	return n, err
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
