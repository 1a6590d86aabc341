package servers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"lmtool.dev/lm/pkg/cappedlog"
	"lmtool.dev/lm/pkg/op"
)

// Logs: the gateway appends each supervised server's stderr to
// LogPath(home, name), a capped log; servers_logs reads its last lines and,
// on the CLI, follows it across rotations without losing or repeating a
// line.

// LogPath is where the gateway records a server's stderr.
func LogPath(home, name string) string { return filepath.Join(home, "servers", name+".log") }

// LogsInput is servers_logs's input.
type LogsInput struct {
	Name   string `json:"name" jsonschema:"the server's name"`
	Lines  int    `json:"lines,omitempty" jsonschema:"how many of the last lines (default 40)"`
	Follow bool   `json:"follow,omitempty" jsonschema:"print lines as JSON Lines as they are written (CLI)"`
}

// LogsOutput is the tail of a server's stderr.
type LogsOutput struct {
	Name  string   `json:"name"`
	File  string   `json:"file"`
	Lines []string `json:"lines"`
}

// LogLine is one line of a followed log.
type LogLine struct {
	Name string `json:"name"`
	Line string `json:"line"`
}

// Logs is servers_logs.
func Logs(ctx context.Context, env *op.Env, in LogsInput) (LogsOutput, error) {
	cfg, err := loadOp(env.Home)
	if err != nil {
		return LogsOutput{}, err
	}
	if _, err := lookup(cfg, env.Home, in.Name); err != nil {
		return LogsOutput{}, err
	}
	n := in.Lines
	if n <= 0 {
		n = 40
	}
	path := LogPath(env.Home, in.Name)
	lines, end, err := cappedlog.Tail(path, n)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return LogsOutput{}, fmt.Errorf("read %s: %w", path, err)
	}
	out := LogsOutput{Name: in.Name, File: path, Lines: lines}
	if out.Lines == nil {
		out.Lines = []string{}
	}
	if !in.Follow {
		return out, nil
	}
	if env.Emit == nil {
		return out, op.Errorf(op.KindInvalid, "follow streams JSON Lines on the CLI only").WithHint("call again with lines instead")
	}
	for _, l := range out.Lines {
		if err := env.Emit(LogLine{Name: in.Name, Line: l}); err != nil {
			return out, err
		}
	}
	if _, err := os.Stat(path); err != nil {
		return out, op.Errorf(op.KindNotFound, "%s has no log yet", in.Name).WithHint("it is written once the gateway starts the server")
	}
	w := cappedlog.Lines(func(l string) error { return env.Emit(LogLine{Name: in.Name, Line: l}) })
	// Follow from where the tail ended, so no line is lost or repeated.
	if err := cappedlog.Follow(ctx, path, end, w); err != nil && ctx.Err() == nil {
		return out, err
	}
	return out, ctx.Err()
}
