// Command lm is one binary of composable tools for people and coding agents.
package main

import (
	"os"

	"lmtool.dev/lm/cli"
	"lmtool.dev/lm/pkg/registry"
)

func main() { os.Exit(cli.Main(registry.Catalog())) }
