package cli

import (
	"io"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v3"

	"lmtool.dev/lm/pkg/op"
)

// DocsTree returns the whole command tree with every command's flags, for
// rendering man pages (cmd/gendocs keeps the renderer out of lm itself).
func DocsTree(catalog op.Catalog) *ucli.Command {
	a := &app{catalog: catalog, streams: Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}, started: time.Now()}
	root := a.root()
	for _, l := range a.leaves {
		a.complete(l)
	}
	return root
}
