package servers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"lmtool.dev/lm/pkg/op"
)

// The npm installer: packages go under $LM_HOME/node with npm's install
// scripts off unless a person allows them; a package is known by the
// executable it declares, and a reinstall that would swap an installed
// dependency for another is refused rather than done quietly.

// Installed is a package npm installed under LM_HOME.
type Installed struct {
	Package string // the npm package name
	Command string // its executable in node_modules/.bin
}

// NodePrefix is where lm installs npm packages.
func NodePrefix(home string) string { return filepath.Join(home, "node") }

// Install installs an npm package (a registry name, name@version, a
// tarball or a directory) under home and finds the command it provides.
// Unless allowScripts, npm runs none of the packages' lifecycle scripts.
func Install(ctx context.Context, home, spec string, allowScripts bool) (*Installed, error) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, op.Errorf(op.KindUnavailable, "%s is not installed (not found in PATH)", tool).WithCategory("npm_not_found").
				WithHint("install Node.js with npm (Debian: apt install nodejs npm; macOS: brew install node), then retry")
		}
	}
	prefix := NodePrefix(home)
	if err := os.MkdirAll(prefix, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", prefix, err)
	}
	before := dependencies(prefix)
	var out bytes.Buffer
	args := []string{"install", "--prefix", prefix, "--no-audit", "--no-fund", "--save"}
	if !allowScripts {
		args = append(args, "--ignore-scripts")
	}
	cmd := exec.CommandContext(ctx, "npm", append(args, spec)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, op.Errorf(op.KindUnavailable, "npm install %s failed (%v):\n%s", spec, err, tail(out.String(), 20)).WithCategory("install_failed").
			WithHint("check the package name, or install it by hand: npm install --prefix %s %s", prefix, spec)
	}
	name := changedDependency(before, dependencies(prefix), spec)
	if name == "" {
		return nil, op.Errorf(op.KindInternal, "npm installed %s but lm cannot tell which package it was", spec)
	}
	bin, err := binOf(filepath.Join(prefix, "node_modules", name))
	if err != nil {
		return nil, err
	}
	return &Installed{Package: name, Command: filepath.Join(prefix, "node_modules", ".bin", bin)}, nil
}

func dependencies(prefix string) map[string]string {
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	data, _ := os.ReadFile(filepath.Join(prefix, "package.json"))
	_ = json.Unmarshal(data, &pkg)
	return pkg.Dependencies
}

// changedDependency is the package the install added or changed; a
// reinstall changes nothing, so the spec's own name is the answer then.
func changedDependency(before, after map[string]string, spec string) string {
	for name, v := range after {
		if before[name] != v {
			return name
		}
	}
	name := spec
	if i := strings.LastIndex(spec, "@"); i > 0 {
		name = spec[:i]
	}
	if _, ok := after[name]; ok {
		return name
	}
	return ""
}

// binOf picks the package's command: its only bin, or the one named after
// the package.
func binOf(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", fmt.Errorf("read the installed package: %w", err)
	}
	var pkg struct {
		Name string          `json:"name"`
		Bin  json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		return "", fmt.Errorf("read %s/package.json: %w", dir, err)
	}
	unscoped := pkg.Name[strings.LastIndex(pkg.Name, "/")+1:]
	var one string
	if json.Unmarshal(pkg.Bin, &one) == nil && one != "" {
		return unscoped, nil
	}
	var bins map[string]string
	if json.Unmarshal(pkg.Bin, &bins) != nil || len(bins) == 0 {
		return "", op.Errorf(op.KindInvalid, "package %s has no command (no bin in its package.json), so it is not a runnable MCP server", pkg.Name).
			WithHint("add it by hand: lm servers add NAME -- node %s/…", dir)
	}
	if _, ok := bins[unscoped]; ok {
		return unscoped, nil
	}
	names := make([]string, 0, len(bins))
	for n := range bins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names[0], nil
}

var nameJunk = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// NameFor derives a server name from a package name:
// @modelcontextprotocol/server-memory → memory.
func NameFor(pkg string) string {
	n := pkg[strings.LastIndex(pkg, "/")+1:]
	for _, p := range []string{"mcp-server-", "server-", "mcp-"} {
		n = strings.TrimPrefix(n, p)
	}
	n = strings.TrimSuffix(strings.TrimSuffix(n, "-mcp-server"), "-mcp")
	n = strings.Trim(nameJunk.ReplaceAllString(n, "-"), "-_")
	if len(n) > 32 {
		n = n[:32]
	}
	return n
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// InstallInput is servers_install's input.
type InstallInput struct {
	Package   string `json:"package" jsonschema:"an npm package (name, name@version, a tarball or a directory)"`
	Name      string `json:"name,omitempty" jsonschema:"the server's name (default: from the package name)"`
	AutoStart bool   `json:"auto_start,omitempty" jsonschema:"start it when the gateway starts"`
	// Install scripts run code from the package (and every dependency) as
	// the person, before anyone has looked at it.
	AllowScripts bool `json:"allow_scripts,omitempty" jsonschema:"let npm run the packages' install scripts (by default it runs none); lm's command line only"`
}

// InstallOutput reports an installation.
type InstallOutput struct {
	Name    string  `json:"name"`
	Package string  `json:"package"`
	Config  *Server `json:"config"`
}

// InstallOp is servers_install.
func InstallOp(ctx context.Context, env *op.Env, in InstallInput) (InstallOutput, error) {
	if in.Name != "" && !NamePattern.MatchString(in.Name) {
		return InstallOutput{}, op.Errorf(op.KindInvalid, "%q is not a valid server name", in.Name).WithHint("letters, digits, - and _")
	}
	// npm would read a leading dash as one of its own options (--prefix,
	// --registry), not as the package.
	if pkg := strings.TrimSpace(in.Package); pkg == "" || strings.HasPrefix(pkg, "-") {
		return InstallOutput{}, op.Errorf(op.KindInvalid, "package %q is not a package npm can install", in.Package).
			WithHint("name an npm package (name or name@version), a tarball or a directory (./dir)")
	}
	if in.AllowScripts && !env.Caller.Terminal {
		return InstallOutput{}, op.Errorf(op.KindDenied, "install scripts run code from the package as you; only lm's command line may allow them").
			WithHint("install without them, or run 'lm servers install --allow-scripts %s' on the command line", in.Package)
	}
	inst, err := Install(ctx, env.Home, in.Package, in.AllowScripts)
	if err != nil {
		return InstallOutput{}, err
	}
	name := in.Name
	if name == "" {
		name = NameFor(inst.Package)
	}
	s := &Server{Package: inst.Package, Command: inst.Command, AutoStart: in.AutoStart}
	_, err = update(env.Home, func(cfg *Config) error {
		if old, ok := cfg.Servers[name]; ok && old.Package != inst.Package {
			return op.Errorf(op.KindConflict, "a server named %q is already configured", name).WithHint("pass --name to choose another name")
		}
		cfg.Servers[name] = s
		return nil
	})
	if err != nil {
		return InstallOutput{}, err
	}
	return InstallOutput{Name: name, Package: inst.Package, Config: s.Redacted()}, Reload(ctx, env.Home)
}
