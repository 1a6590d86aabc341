package cli

import (
	"context"
	"runtime"
	"runtime/debug"

	ucli "github.com/urfave/cli/v3"
)

// version and commit are set at build time with -ldflags "-X".
var (
	version = "dev"
	commit  = ""
)

func (a *app) versionCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "version",
		Usage: "Print lm's version, commit and Go version",
		Action: func(ctx context.Context, cmd *ucli.Command) error {
			p, err := a.printer(cmd)
			if err != nil {
				return err
			}
			return p.Document(ctx, struct {
				Version string `json:"version"`
				Commit  string `json:"commit"`
				Go      string `json:"go"`
			}{version, buildCommit(), runtime.Version()})
		},
	}
}

func buildCommit() string {
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
}
