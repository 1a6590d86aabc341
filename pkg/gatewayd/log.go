package gatewayd

import (
	"fmt"

	"lmtool.dev/lm/pkg/cappedlog"
	"lmtool.dev/lm/pkg/config"
)

// Defaults for the background gateway's log, when config.toml's [gateway]
// table sets no log_size or log_files: a line per request and per
// get_user_request comes to some hundreds of bytes, so the log holds
// several days of a busy desk in at most (1+3)×8 MiB.
const (
	DefaultLogSize  = 8 << 20
	DefaultLogFiles = 3
)

// Settings are config.toml's [gateway] table, read in one place so that
// its keys are checked against all of them.
type Settings struct {
	LogSize  int64 `toml:"log_size"`  // bytes per log file
	LogFiles int   `toml:"log_files"` // rotated copies kept
	// AllowOrigins are other origins whose pages may call the gateway
	// (--allow-origin adds to them).
	AllowOrigins []string `toml:"allow_origins"`
}

// LoadSettings reads [gateway] from home's config.toml, with the defaults
// for what it does not set.
func LoadSettings(home string) (Settings, error) {
	s := Settings{LogSize: DefaultLogSize, LogFiles: DefaultLogFiles}
	if err := config.Table(home, "gateway", &s); err != nil {
		return Settings{}, fmt.Errorf("%w ([gateway] takes log_size, the bytes per log file, log_files, the rotated copies kept, and allow_origins, a list of origins)", err)
	}
	if s.LogSize < 4096 || s.LogFiles < 1 {
		return Settings{}, fmt.Errorf("[gateway] in %s: log_size %d and log_files %d: want at least 4096 bytes and 1 file",
			config.Path(home), s.LogSize, s.LogFiles)
	}
	return s, nil
}

// OpenLog opens the background gateway's log, bounded by [gateway] log_size
// (bytes per file) and log_files (rotated copies kept) in home's
// config.toml, and makes it the process's standard output and error so a
// crash report lands in it too.
func (f Files) OpenLog(home string) (*cappedlog.Log, error) {
	limits, err := LoadSettings(home)
	if err != nil {
		return nil, err
	}
	l, err := cappedlog.Open(f.Log(), limits.LogSize, limits.LogFiles)
	if err != nil {
		return nil, fmt.Errorf("open the gateway log: %w", err)
	}
	if err := l.FollowStdio(); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}
