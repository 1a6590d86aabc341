package gateway

import (
	"log/slog"
	"strings"
)

// logLines is the Stderr of the operations the gateway runs. What they
// write there is meant for a person at a terminal ("lm: warning: …",
// "lm: server x: connected"); in the gateway each line becomes a record of
// its log instead, so the log stays in one format (JSON Lines when it is a
// file) that tools can read.
type logLines struct{ log *slog.Logger }

// Write logs each line of p; a line starting "lm: warning: " is a warning.
func (w logLines) Write(p []byte) (int, error) {
	for _, line := range strings.Split(string(p), "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "lm: ")
		if line == "" {
			continue
		}
		if msg, ok := strings.CutPrefix(line, "warning: "); ok {
			w.log.Warn(msg)
		} else {
			w.log.Info(line)
		}
	}
	return len(p), nil
}
