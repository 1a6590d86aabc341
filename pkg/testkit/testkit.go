// Package testkit holds what many packages' tests need alike: an
// environment over a fresh store, a buffer several goroutines write, a free
// loopback port. Only tests import it.
package testkit

import (
	"bytes"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/store"
)

// Env is an environment over a fresh store in its own LM_HOME, a temporary
// directory, as a face builds one: the zero caller (the least trusted;
// set Caller for another), stderr discarded, the store's default lock
// timeout.
func Env(t testing.TB) *op.Env { return EnvAt(t.TempDir()) }

// EnvAt is [Env] with LM_HOME at home and the store at home/lm.db.
func EnvAt(home string) *op.Env {
	return &op.Env{Store: store.New(filepath.Join(home, "lm.db"), 0), Home: home, Stderr: io.Discard, Now: time.Now}
}

// Buffer is a bytes.Buffer that goroutines may write while a test reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Bytes is a copy of what was written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// FreePort is a loopback TCP port nothing listened on a moment ago, for a
// child server that takes its port as an argument.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
