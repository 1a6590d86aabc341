package cappedlog_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"lmtool.dev/lm/pkg/cappedlog"
)

// Writers that share a log (as lm mcp processes do) never interleave or cut
// a record, and the log with its rotated copy stays within twice the cap.
// Once a writer is closed, its records are in the file.
func TestSharedLogKeepsWholeRecordsWithinTheCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "mcp.log")
	const max, writers, records = 2048, 4, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log, err := cappedlog.OpenShared(path, max, 1) // a handle of its own, as another process has
			if err != nil {
				t.Error(err)
				return
			}
			defer log.Close()
			for i := range records {
				if _, err := fmt.Fprintf(log, "writer %d record %03d %s\n", w, i, strings.Repeat("x", 40)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	last, err := cappedlog.OpenShared(path, max, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintln(last, "the last record"); err != nil {
		t.Fatal(err)
	}
	last.Close() // the records are queued until then
	record := regexp.MustCompile(`^writer \d record \d{3} x{40}$`)
	for _, p := range []string{path + ".1", path} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > max {
			t.Errorf("%s has %d bytes, over the cap of %d", p, len(data), max)
		}
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		for i, line := range lines {
			if !record.MatchString(line) && !(p == path && i == len(lines)-1 && line == "the last record") {
				t.Errorf("%s line %d is not a whole record: %q", p, i+1, line)
			}
		}
	}
	if data, _ := os.ReadFile(path); !strings.HasSuffix(string(data), "the last record\n") {
		t.Errorf("the newest record is not at the end of the log:\n%s", data)
	}
}
