// Package registry lists every lm operation. It is the one place a new
// domain is wired in: the CLI and the MCP server both read it.
package registry

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"lmtool.dev/lm/pkg/admin"
	"lmtool.dev/lm/pkg/buildinfo"
	"lmtool.dev/lm/pkg/extract"
	"lmtool.dev/lm/pkg/gatewayd"
	"lmtool.dev/lm/pkg/generate"
	"lmtool.dev/lm/pkg/gitx"
	"lmtool.dev/lm/pkg/jobs"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/queue"
	"lmtool.dev/lm/pkg/queue/pgstore"
	"lmtool.dev/lm/pkg/servers"
	"lmtool.dev/lm/pkg/servers/client"
	"lmtool.dev/lm/pkg/tasks"
	"lmtool.dev/lm/pkg/verify"
)

// Groups are the command groups in the order help shows them.
var Groups = []op.Group{
	{Name: "queue", Summary: "The human→agent instruction queue (get_user_request)"},
	{Name: "store", Summary: "Inspect, check and back up the shared store"},
	{Name: "tasks", Summary: "Discover the project's tasks (make, npm, just, …) and run them"},
	{Name: "jobs", Summary: "Run tasks and commands as supervised background jobs with cursor-based logs"},
	{Name: "extract", Summary: "Frontmatter, regex matches and code structure from files (local_extract, local_analyze)"},
	{Name: "verify", Summary: "Run a checklist against files, with line evidence (local_verify)"},
	{Name: "generate", Summary: "Fill templates with variables, strictly (local_generate)"},
	{Name: "git", Summary: "Git status, diff, log and changed files as JSON (local_git)"},
	{Name: "servers", Summary: "Install, supervise and talk to MCP servers: the gateway's hub, and a client for any server"},
	{Name: "gateway", Summary: "Serve the web page, the queue's HTTP API and MCP over HTTP"},
}

// Subgroups describe the commands inside a group that only hold others,
// by CLI path.
var Subgroups = map[string]string{
	"servers fav":    "Saved tool calls: save one under a name, then list, run or remove them",
	"servers secret": "The secrets servers reference as ${secret:NAME}: set, list and remove them",
}

// Commands are the operations that are top-level commands, not groups.
var Commands = []string{"version"}

// Catalog is everything lm offers, for its faces.
func Catalog() op.Catalog {
	return op.Catalog{Ops: All(), Resources: Resources(), Groups: Groups, Subgroups: Subgroups}
}

// All returns every operation, sorted by CLI path. It panics on a duplicate
// tool name or path, or an operation outside the known groups.
func All() []op.Operation {
	var ops []op.Operation
	for _, domain := range [][]op.Operation{
		queue.Ops(),
		pgstore.Ops(),
		admin.Ops(),
		buildinfo.Ops(),
		tasks.Ops(),
		jobs.Ops(),
		gitx.Ops(),
		extract.Ops(),
		verify.Ops(),
		generate.Ops(),
		servers.Ops(),
		client.Ops(),
		gatewayd.Ops(All),
	} {
		ops = append(ops, domain...)
	}
	sort.Slice(ops, func(i, j int) bool {
		return strings.Join(ops[i].Info().Path, " ") < strings.Join(ops[j].Info().Path, " ")
	})
	names, paths := map[string]bool{}, map[string]bool{}
	for _, o := range ops {
		m := o.Info()
		p := strings.Join(m.Path, " ")
		if names[m.Name] || paths[p] {
			panic(fmt.Sprintf("registry: duplicate operation %s (%s)", m.Name, p))
		}
		if !known(m.Group()) && !slices.Contains(Commands, m.Group()) {
			panic(fmt.Sprintf("registry: operation %s is in unknown group %q", m.Name, m.Group()))
		}
		names[m.Name], paths[p] = true, true
	}
	return ops
}

// Resources returns every MCP resource.
func Resources() []op.Resource {
	var rs []op.Resource
	for _, domain := range [][]op.Resource{tasks.Resources(), jobs.Resources()} {
		rs = append(rs, domain...)
	}
	for _, r := range rs {
		if !known(r.Group) {
			panic(fmt.Sprintf("registry: resource %s is in unknown group %q", r.URITemplate, r.Group))
		}
	}
	return rs
}

func known(group string) bool {
	for _, g := range Groups {
		if g.Name == group {
			return true
		}
	}
	return false
}
