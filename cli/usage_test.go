package cli

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"65536": 65536, "64KiB": 64 << 10, "64k": 64 << 10, "8MiB": 8 << 20, "1.5MiB": 3 << 19, "2MB": 2000000, "1GiB": 1 << 30} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "8XB", "-1", "1e3", "99999999999GiB", "8 MiB MiB"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

func TestClosest(t *testing.T) {
	commands := []string{"queue", "jobs", "job", "tasks", "servers", "list", "ls", "status", "state"}
	for word, want := range map[string]string{
		"queu": "queue", "qeue": "queue", "lst": "list", "stauts": "status", "serv": "servers",
		"zzzz": "", "x": "", "q": "", "frobnicate": "",
	} {
		if got := closest(word, commands); got != want {
			t.Errorf("closest(%q) = %q, want %q", word, got, want)
		}
	}
}
