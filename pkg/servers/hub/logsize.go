package hub

import (
	"fmt"

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
