// Package buildinfo says which lm this is: its version, the commit it was
// built from and the Go toolchain, as `lm version` and the lm_version tool
// report them.
package buildinfo

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"

	"lmtool.dev/lm/pkg/op"
)

// version and commit are set at build time:
// -ldflags "-X lmtool.dev/lm/pkg/buildinfo.version=… -X …commit=…".
var (
	version = "dev"
	commit  = ""
)

// Version is lm's version.
func Version() string { return version }

// Info describes the running binary.
type Info struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Go      string `json:"go"`
}

// Current describes the running binary.
func Current() Info {
	return Info{Version: version, Commit: buildCommit(), Go: runtime.Version()}
}

// buildCommit reads the commit once; build info is parsed on every call.
var buildCommit = sync.OnceValue(func() string {
	if commit != "" {
		return commit
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
})

// Ops is the version operation: `lm version` and the lm_version tool.
func Ops() []op.Operation {
	return []op.Operation{
		op.New(op.Meta{Name: "lm_version", Path: []string{"version"}, Callers: op.Anyone,
			Summary: "Print lm's version, commit and Go version",
			Effect:  op.ReadOnly, Idempotent: true},
			func(context.Context, *op.Env, struct{}) (Info, error) { return Current(), nil }),
	}
}
