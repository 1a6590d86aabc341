// Package layering holds the test that keeps lm's packages in their layers:
// it reads every package's imports (build constraints honoured, tests
// excluded: a test may assemble whatever it drives) and fails on an arrow
// the table below does not allow.
package layering

import (
	"errors"
	"go/build"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "lmtool.dev/lm"

// A layer says which packages a package may import without naming the pair.
type layer int

const (
	// foundation: libraries every layer uses (the operation model, the
	// store, I/O, confinement, process and file helpers). They import only
	// each other.
	foundation layer = iota
	// domain: the behaviour, each offering its operations. A domain
	// imports foundations and packages of its own family (pkg/servers/…
	// with pkg/servers), never a face, another domain only as a listed
	// pair.
	domain
	// face: how callers reach the operations (the command line, MCP, HTTP).
	// A face takes the operations it serves from its caller and touches a
	// domain directly only as a listed pair.
	face
	// root: the composition root, pkg/registry, which lists every
	// operation; only entry points import it.
	root
	// entry: programs and the tests that drive the binary; they assemble
	// everything and nothing imports them.
	entry
)

var layerNames = map[layer]string{foundation: "foundation", domain: "domain", face: "face", root: "composition root", entry: "entry point"}

// layers places every package of the module (paths below the module).
var layers = map[string]layer{
	"pkg/agentload":                   foundation,
	"pkg/buildinfo":                   foundation,
	"pkg/cappedlog":                   foundation,
	"pkg/cgroup":                      foundation,
	"pkg/config":                      foundation,
	"pkg/confine":                     foundation,
	"pkg/duration":                    foundation,
	"pkg/guard":                       foundation,
	"pkg/helpercall":                  foundation,
	"pkg/httpjson":                    foundation,
	"pkg/sse":                         foundation,
	"pkg/jsonio":                      foundation,
	"pkg/liveness":                    foundation,
	"pkg/mcpschema":                   foundation,
	"pkg/model":                       foundation,
	"pkg/npmtest":                     foundation,
	"pkg/op":                          foundation,
	"pkg/privatefile":                 foundation,
	"pkg/proc":                        foundation,
	"pkg/queue/pgstore/pgtest":        foundation,
	"pkg/safegit":                     foundation,
	"pkg/store":                       foundation,
	"pkg/table":                       foundation,
	"pkg/testkit":                     foundation,
	"pkg/admin":                       domain,
	"pkg/extract":                     domain,
	"pkg/gatewayd":                    domain,
	"pkg/generate":                    domain,
	"pkg/gitx":                        domain,
	"pkg/jobs":                        domain,
	"pkg/queue":                       domain,
	"pkg/queue/pgstore":               domain,
	"pkg/servers":                     domain,
	"pkg/servers/breaker":             domain,
	"pkg/servers/cache":               domain,
	"pkg/servers/client":              domain,
	"pkg/servers/enhance":             domain,
	"pkg/servers/keyring":             domain,
	"pkg/servers/keyring/keyringtest": domain,
	"pkg/tasks":                       domain,
	"pkg/verify":                      domain,
	"pkg/gateway/token":               domain,
	"cli":                             face,
	"pkg/mcpx":                        face,
	"pkg/gateway":                     face,
	"pkg/servers/hub":                 face,
	"pkg/registry":                    root,
	"cmd/lm":                          entry,
	"cmd/gendocs":                     entry,
	"cmd/lmbench":                     entry,
}

// pairs are the arrows the layers alone do not allow, each with why it is
// sound. docs/architecture.md lists the same pairs; a pair nothing uses
// any more fails the test, so the list stays what the code is.
var pairs = map[[2]string]string{
	{"pkg/jobs", "pkg/tasks"}:                  "jobs run a task by name: discovery and the allowlist are tasks'",
	{"pkg/verify", "pkg/extract"}:              "a checklist's checks are extractions (frontmatter, matches, code structure)",
	{"pkg/admin", "pkg/queue/pgstore"}:         "lm store info, check and backup cover the queue's database when the queue lives in one",
	{"pkg/queue", "pkg/gatewayd"}:              "lm queue status says whether a gateway serves this store",
	{"pkg/servers", "pkg/gatewayd"}:            "lm servers acts through a running gateway's hub when there is one",
	{"pkg/gatewayd", "pkg/gateway/token"}:      "starting the gateway in the background makes or checks the person's token first",
	{"pkg/gateway", "pkg/gatewayd"}:            "the gateway and its background start share one set of serving checks (token, address, origins)",
	{"cli", "pkg/gatewayd"}:                    "lm gateway start|stop|status|logs manage the background gateway",
	{"cli", "pkg/gateway/token"}:               "lm gateway's token commands and its start-up make and read the tokens",
	{"cli", "pkg/servers"}:                     "lm mcp --connect bridges stdio to a running gateway's /mcp",
	{"cli", "pkg/mcpx"}:                        "lm mcp serves the operations over stdio",
	{"cli", "pkg/queue"}:                       "--store takes a queue database's URL as well as a file: which one it is, is the queue's to say",
	{"cli", "pkg/queue/pgstore"}:               "--store and [store] url name a queue database: its password is checked and masked before anything opens it",
	{"cli", "pkg/gateway"}:                     "lm gateway runs the gateway",
	{"pkg/gateway", "pkg/gateway/token"}:       "each request's caller comes from its bearer token",
	{"pkg/gateway", "pkg/mcpx"}:                "the gateway serves the operations at /mcp",
	{"pkg/gateway", "pkg/servers/hub"}:         "the gateway serves the hub of supervised servers",
	{"pkg/gateway", "pkg/servers"}:             "the gateway starts the hub from servers.json and its settings, and speaks spec 002 over the hub's tools",
	{"pkg/gateway", "pkg/servers/enhance"}:     "the gateway serves POST /ollama/enhance",
	{"pkg/gateway", "pkg/servers/client"}:      "the page's Ask view keeps its conversation as the MCP client's threads",
	{"pkg/gateway", "pkg/queue"}:               "the page's event stream renders the queue's events",
	{"pkg/servers/hub", "pkg/mcpx"}:            "the hub serves the aggregated tools as an MCP server",
	{"pkg/servers/hub", "pkg/servers"}:         "the hub supervises the servers servers.json configures",
	{"pkg/servers/hub", "pkg/servers/breaker"}: "each supervised server has a circuit breaker",
	{"pkg/servers/hub", "pkg/servers/cache"}:   "the hub caches read-only tool results",
}

// family is the domain a package belongs to: pkg/servers/client is
// pkg/servers'.
func family(pkg string) string {
	parts := strings.SplitN(pkg, "/", 3)
	if len(parts) >= 2 && parts[0] == "pkg" {
		return parts[0] + "/" + parts[1]
	}
	return pkg
}

// check returns every import in graph (package → the module's packages it
// imports) that the layers and pairs do not allow, and every pair nothing
// uses.
func check(graph map[string][]string, layers map[string]layer, pairs map[[2]string]string) []string {
	var bad []string
	used := map[[2]string]bool{}
	for _, from := range slices.Sorted(maps.Keys(graph)) {
		lf, ok := layers[from]
		if !ok {
			bad = append(bad, from+" is in no layer: add it to the table")
			continue
		}
		for _, to := range graph[from] {
			lt, ok := layers[to]
			if !ok {
				bad = append(bad, from+" imports "+to+", which is in no layer")
				continue
			}
			if _, listed := pairs[[2]string{from, to}]; listed {
				used[[2]string{from, to}] = true
			}
			if reason := forbidden(from, lf, to, lt); reason != "" {
				bad = append(bad, from+" imports "+to+": "+reason)
				continue
			}
			if !byLayer(from, lf, to, lt) && !used[[2]string{from, to}] {
				bad = append(bad, from+" ("+layerNames[lf]+") imports "+to+" ("+layerNames[lt]+"), which is no listed pair")
			}
		}
	}
	for _, p := range slices.SortedFunc(maps.Keys(pairs), func(a, b [2]string) int { return slices.Compare(a[:], b[:]) }) {
		if !used[p] {
			bad = append(bad, "the pair "+p[0]+" → "+p[1]+" is listed but nothing uses it: remove it")
		}
	}
	return bad
}

// forbidden names the arrows no pair can allow.
func forbidden(from string, lf layer, to string, lt layer) string {
	switch {
	case lt == entry:
		return "nothing imports an entry point"
	case lt == root && lf != entry:
		return "only entry points import the composition root; a face is handed the operations"
	case lf == foundation && lt != foundation:
		return "a foundation imports only foundations"
	case lf == domain && lt == face:
		return "a domain never imports a face"
	}
	return ""
}

// byLayer reports whether the layers alone allow the arrow.
func byLayer(from string, lf layer, to string, lt layer) bool {
	switch {
	case lt == foundation:
		return true
	case lf == domain && lt == domain:
		return family(from) == family(to)
	case lf == root:
		return lt == domain
	case lf == entry:
		return true
	}
	return false
}

// imports reads the module's import graph from its source: every package
// below root with non-test files (testdata and node_modules aside) and the
// module's packages those files import.
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	graph := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		var none *build.NoGoError
		if errors.As(err, &none) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(p.GoFiles)+len(p.CgoFiles) == 0 {
			return nil // tests only: not part of any program
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		var deps []string
		for _, imp := range p.Imports {
			if dep, ok := strings.CutPrefix(imp, module+"/"); ok {
				deps = append(deps, dep)
			}
		}
		graph[filepath.ToSlash(rel)] = deps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return graph
}

func TestLayers(t *testing.T) {
	graph := imports(t, filepath.Join("..", ".."))
	if len(graph) < 20 || graph["pkg/op"] == nil && graph["cli"] == nil {
		t.Fatalf("read %d packages; is the test running in pkg/layering?", len(graph))
	}
	for _, v := range check(graph, layers, pairs) {
		t.Error(v)
	}
}

// TestLayersDocumented keeps docs/architecture.md's list of pairs the
// test's: every pair appears there as "from → to".
func TestLayersDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	for p := range pairs {
		arrow := strings.TrimPrefix(p[0], "pkg/") + " → " + strings.TrimPrefix(p[1], "pkg/")
		if !strings.Contains(string(doc), arrow) {
			t.Errorf("docs/architecture.md does not list the pair %s (%s)", arrow, pairs[p])
		}
	}
}

// TestCheckRefusesWrongArrows is the test of the test: a graph like lm's
// with one wrong arrow at a time must fail, naming the arrow.
func TestCheckRefusesWrongArrows(t *testing.T) {
	sound := map[string][]string{
		"cmd/lm":             {"cli", "pkg/registry"},
		"cli":                {"pkg/op", "pkg/mcpx"},
		"pkg/mcpx":           {"pkg/op"},
		"pkg/registry":       {"pkg/queue", "pkg/jobs", "pkg/op"},
		"pkg/queue":          {"pkg/op", "pkg/store"},
		"pkg/jobs":           {"pkg/tasks", "pkg/op"},
		"pkg/tasks":          {"pkg/op"},
		"pkg/servers":        {"pkg/op"},
		"pkg/servers/client": {"pkg/servers", "pkg/op"},
		"pkg/op":             {"pkg/store"},
		"pkg/store":          nil,
	}
	testLayers := map[string]layer{}
	for pkg := range sound {
		testLayers[pkg] = layers[pkg]
	}
	testPairs := map[[2]string]string{{"pkg/jobs", "pkg/tasks"}: "listed", {"cli", "pkg/mcpx"}: "listed"}
	if bad := check(sound, testLayers, testPairs); len(bad) > 0 {
		t.Fatalf("a sound graph fails: %v", bad)
	}
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"domain imports a face", "pkg/queue", "pkg/mcpx", "a domain never imports a face"},
		{"face imports the composition root", "pkg/mcpx", "pkg/registry", "only entry points import the composition root"},
		{"domain imports the composition root", "pkg/queue", "pkg/registry", "only entry points import the composition root"},
		{"foundation imports a domain", "pkg/op", "pkg/queue", "a foundation imports only foundations"},
		{"domain imports another domain unlisted", "pkg/queue", "pkg/tasks", "no listed pair"},
		{"face imports a domain unlisted", "cli", "pkg/queue", "no listed pair"},
		{"anything imports an entry point", "cli", "cmd/lm", "nothing imports an entry point"},
		{"import of a package in no layer", "pkg/queue", "pkg/newthing", "in no layer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			graph := maps.Clone(sound)
			graph[tc.from] = append(slices.Clone(graph[tc.from]), tc.to)
			bad := check(graph, testLayers, testPairs)
			if len(bad) != 1 || !strings.Contains(bad[0], tc.from+" imports "+tc.to) && !strings.Contains(bad[0], tc.from+" (") || !strings.Contains(bad[0], tc.want) {
				t.Errorf("%s → %s: got %q, want one violation saying %q", tc.from, tc.to, bad, tc.want)
			}
		})
	}
	t.Run("a listed pair cannot allow a forbidden arrow", func(t *testing.T) {
		graph := maps.Clone(sound)
		graph["pkg/queue"] = append(slices.Clone(graph["pkg/queue"]), "pkg/mcpx")
		pairs := maps.Clone(testPairs)
		pairs[[2]string{"pkg/queue", "pkg/mcpx"}] = "says who"
		if bad := check(graph, testLayers, pairs); len(bad) != 1 || !strings.Contains(bad[0], "a domain never imports a face") {
			t.Errorf("got %q, want the arrow refused despite the pair", bad)
		}
	})
	t.Run("a package in no layer", func(t *testing.T) {
		graph := maps.Clone(sound)
		graph["pkg/newthing"] = []string{"pkg/op"}
		if bad := check(graph, testLayers, testPairs); len(bad) != 1 || !strings.Contains(bad[0], "pkg/newthing is in no layer") {
			t.Errorf("got %q, want the new package named", bad)
		}
	})
	t.Run("a pair nothing uses", func(t *testing.T) {
		pairs := maps.Clone(testPairs)
		pairs[[2]string{"pkg/queue", "pkg/tasks"}] = "stale"
		if bad := check(sound, testLayers, pairs); len(bad) != 1 || !strings.Contains(bad[0], "pkg/queue → pkg/tasks is listed but nothing uses it") {
			t.Errorf("got %q, want the stale pair named", bad)
		}
	})
}
