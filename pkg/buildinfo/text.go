package buildinfo

import "fmt"

// Text is the version line people read: "lm 1.2.0 (commit 3f2a…, go1.26)".
func (i Info) Text() (string, string) {
	return fmt.Sprintf("lm %s (commit %s, %s)\n", i.Version, i.Commit, i.Go), ""
}
