package hub

import (
	"fmt"
	"os"
	"path/filepath"

	"lmtool.dev/lm/pkg/config"
)

// DefaultLogSize bounds a server's stderr log, and its one rotated copy
// (NAME.log.1), when config.toml's [servers] table sets no log_size: a
// child that floods stderr costs at most twice this on disk.
const DefaultLogSize = 1 << 20

// logSize is [servers] log_size in home's config.toml, else the default.
func logSize(home string) (int64, error) {
	settings := struct {
		LogSize int64 `toml:"log_size"`
	}{DefaultLogSize}
	if err := config.Table(home, "servers", &settings); err != nil {
		return 0, fmt.Errorf("%w ([servers] takes log_size, the bytes of stderr kept per server)", err)
	}
	if settings.LogSize < 4096 {
		return 0, fmt.Errorf("log_size in %s is %d: want at least 4096 bytes", config.Path(home), settings.LogSize)
	}
	return settings.LogSize, nil
}

// cappedLog appends to a log file and, when the next write would take it
// past max bytes, moves it to PATH.1 (replacing the previous one) and
// starts afresh: the newest output is always kept, in at most 2×max bytes.
type cappedLog struct {
	path string
	max  int64
	f    *os.File
	size int64
}

func openCappedLog(path string, max int64) (*cappedLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create the log directory: %w", err)
	}
	l := &cappedLog{path: path, max: max}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	l.f = f
	if fi, err := f.Stat(); err == nil {
		l.size = fi.Size()
	}
	return l, nil
}

func (l *cappedLog) Write(p []byte) (int, error) {
	n := len(p)
	if int64(len(p)) > l.max {
		p = p[int64(len(p))-l.max:] // only the newest max bytes can be kept
	}
	if l.size+int64(len(p)) > l.max {
		if err := l.rotate(); err != nil {
			return 0, err
		}
	}
	written, err := l.f.Write(p)
	l.size += int64(written)
	if err != nil {
		return 0, err
	}
	return n, nil
}

func (l *cappedLog) rotate() error {
	if err := l.f.Close(); err != nil {
		return err
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		return err
	}
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	l.f, l.size = f, 0
	return nil
}

func (l *cappedLog) Close() error { return l.f.Close() }
