package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	ucli "github.com/urfave/cli/v3"

	"lmtool.dev/lm/pkg/op"
)

// environment and files are what every lm command reads, for the man
// pages' ENVIRONMENT and FILES sections.
var environment = [][2]string{
	{"LM_HOME", "where lm keeps its files (default: $XDG_DATA_HOME/lm, else ~/.local/share/lm)"},
	{"LM_STORE", "the store file (--store overrides it; default: $LM_HOME/lm.db)"},
	{"LM_LOCK_TIMEOUT", "how long to wait for another process holding the store (--lock-timeout; default 5s)"},
	{"LM_JSON_ERRORS", "1: report errors as a JSON object on stderr (--json-errors)"},
	{"NO_COLOR", "set: no colour in tables, even on a terminal"},
	{"LM_JOBS_MAX_RUNNING", "how many jobs run at once before new ones wait queued (default 8)"},
	{"LM_JOBS_CGROUP", "auto (default): each job in a cgroup of its own where the system allows it; off: never"},
	{"LM_MODEL, LM_MODEL_URL, LM_MODEL_PROVIDER", "the optional language model, over config.toml's [model]"},
	{"LM_DEFAULT_WAIT_SECONDS, LM_DEFAULT_EMPTY_RESPONSE, LM_AGENT_STALE_AFTER_SECONDS", "seed the queue settings of a store that holds none yet"},
	{"LM_API_TOKEN", "the gateway's person token instead of $LM_HOME/gateway.token; the token lm mcp --connect sends"},
	{"LM_GATEWAY_ADDR", "the gateway's address (--addr; default 127.0.0.1:7437)"},
	{"LM_LOG_LEVEL", "the gateway's log level (--log-level): debug, info, warn or error"},
}

var files = [][2]string{
	{"$LM_HOME/lm.db", "the store: the queue, jobs, history, caches (bbolt, mode 0600)"},
	{"$LM_HOME/config.toml", "settings: [model], [jobs], the gateway"},
	{"$LM_HOME/servers.json", "the MCP servers the gateway supervises (mcpServers format)"},
	{"$LM_HOME/mcp_allowlist.toml, $LM_HOME/allowlist.toml", "the tasks agents may run, and those people keep themselves from running"},
	{"$LM_HOME/jobs/ID/", "a job's output ring and supervisor log"},
	{"$LM_HOME/gateway.json, gateway.pid, gateway.log", "the running gateway's address, process and log"},
}

// synopsis is the SYNOPSIS of a page: every command at and below cmd
// (whose words are path) with its options and positional arguments, as
// people type them.
func synopsis(path string, cmd *ucli.Command) []string {
	if cmd.Hidden || cmd.Name == "help" {
		return nil
	}
	var lines []string
	if len(cmd.Commands) == 0 || cmd.ArgsUsage != "" {
		lines = append(lines, usageLine(path, cmd))
	}
	for _, sub := range cmd.Commands {
		lines = append(lines, synopsis(path+" "+sub.Name, sub)...)
	}
	return lines
}

// usageLine is how a command is typed: "lm queue show [options] ID".
func usageLine(path string, cmd *ucli.Command) string {
	return strings.TrimSpace(path + " [options] " + cmd.ArgsUsage)
}

var synopsisSection = regexp.MustCompile(`(?s)\.SH SYNOPSIS\n.*?\n\n\n`)

// withSections gives a rendered page its SYNOPSIS with positional
// arguments and the ENVIRONMENT, FILES, EXIT STATUS and SEE ALSO sections.
func withSections(page, self, path string, cmd *ucli.Command, pages []string) string {
	var syn strings.Builder
	syn.WriteString(".SH SYNOPSIS\n.nf\n")
	for _, line := range synopsis(path, cmd) {
		syn.WriteString(roffEscape(line) + "\n")
	}
	syn.WriteString(".fi\n\n\n")
	page = synopsisSection.ReplaceAllLiteralString(page, syn.String())

	var b strings.Builder
	b.WriteString(page)
	b.WriteString("\n.SH ENVIRONMENT\n")
	for _, e := range environment {
		fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", roffEscape(e[0]), roffEscape(e[1]))
	}
	b.WriteString("\n.SH FILES\n")
	for _, f := range files {
		fmt.Fprintf(&b, ".TP\n.I %s\n%s\n", roffEscape(f[0]), roffEscape(f[1]))
	}
	b.WriteString("\n.SH EXIT STATUS\n")
	for _, row := range op.ExitStatuses() {
		fmt.Fprintf(&b, ".TP\n.B %d\n%s\n", row.Code, roffEscape(row.Meaning))
	}
	b.WriteString("\n.SH SEE ALSO\n")
	var others []string
	for _, p := range pages {
		if p != self {
			others = append(others, fmt.Sprintf(".BR %s (1)", roffEscape(p)))
		}
	}
	b.WriteString(strings.Join(others, ",\n") + "\n")
	return b.String()
}

// roffEscape keeps text literal in roff: backslashes, and a leading dot or
// quote that would start a request.
func roffEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// pageNames are every man page's name, lm first.
func pageNames(tree *ucli.Command) []string {
	names := []string{"lm"}
	for _, c := range tree.Commands {
		if !c.Hidden && c.Name != "help" && c.Name != "completion" {
			names = append(names, "lm-"+c.Name)
		}
	}
	slices.Sort(names[1:])
	return names
}
