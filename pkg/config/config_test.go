package config

import (
	"os"
	"strings"
	"testing"
)

type jobs struct {
	MaxRunning int    `toml:"max_running"`
	Shell      string `toml:"shell"`
}

func TestTableIsStrictWithinItsOwnTable(t *testing.T) {
	for _, c := range []struct {
		file    string
		want    jobs
		wantErr string
	}{
		{"", jobs{MaxRunning: 8}, ""},
		{"[model]\nmodel = \"x\"\nwhatever = 1\n", jobs{MaxRunning: 8}, ""},
		{"[jobs]\nmax_running = 2\n\n[model]\nmodel = \"x\"\n", jobs{MaxRunning: 2}, ""},
		{"[jobs]\nmax_runing = 2\n", jobs{}, "line 2: unknown key jobs.max_runing"},
		{"[jobs]\nmax_running = \"two\"\n", jobs{}, "line 2 column"},
		{"[jobs\n", jobs{}, "line 1 column"},
	} {
		t.Run(c.file, func(t *testing.T) {
			home := t.TempDir()
			if c.file != "" {
				if err := os.WriteFile(Path(home), []byte(c.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got := jobs{MaxRunning: 8}
			err := Table(home, "jobs", &got)
			switch {
			case c.wantErr == "" && err != nil:
				t.Errorf("%q: %v", c.file, err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), Path(home))):
				t.Errorf("%q: error %v, want one naming the file and %q", c.file, err, c.wantErr)
			case c.wantErr == "" && got != c.want:
				t.Errorf("%q: got %+v, want %+v", c.file, got, c.want)
			}
		})
	}
}
