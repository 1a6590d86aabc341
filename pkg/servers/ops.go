package servers

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/op"
)

// Ops are `lm servers …` and the MCP tools servers_*. Changing the
// configuration (add, rm, enable, disable, import, install) is for people
// only: it decides which programs the gateway runs, so it is not an MCP
// tool. Nor is setting or removing a secret: an agent has no business
// holding one. Reading (secrets by name only) and start/stop/restart are.
func Ops() []op.Operation {
	return []op.Operation{
		op.New(op.Meta{
			Name: "servers_list", Path: []string{"servers", "list"},
			Callers:     op.Agents,
			Summary:     "List the configured MCP servers, with their state when a gateway runs",
			Description: "Env and header values are shown as <redacted> unless they are ${env:NAME} references.",
			Effect:      op.ReadOnly, Idempotent: true,
			HTTP: []op.Route{{Method: "GET", Path: "/api/servers", Summary: "The configured MCP servers"}},
		}, List),
		op.New(op.Meta{
			Name: "servers_show", Path: []string{"servers", "show"},
			Callers: op.Agents,
			Summary: "Show one server's configuration and state", Args: []string{"name"},
			Effect: op.ReadOnly, Idempotent: true,
		}, Show),
		op.New(op.Meta{
			Name: "servers_add", Path: []string{"servers", "add"},
			Callers:     op.PersonOnly,
			Summary:     "Add an MCP server: a command to run over stdio, or --url for an HTTP server",
			Description: "Values may reference the environment as ${env:NAME}, resolved when the server starts. A running gateway picks the change up at once.",
			Examples:    "lm servers add memory --auto-start -- npx -y @modelcontextprotocol/server-memory\nlm servers add docs --url https://example.com/mcp\nlm servers add gh --env 'GITHUB_TOKEN=${env:GITHUB_TOKEN}' -- github-mcp-server stdio",
			Args:        []string{"name", "command"},
			Effect:      op.Mutating, CLIOnly: true,
			HTTP: []op.Route{{Method: "POST", Path: "/api/servers", Summary: "Add a server, as lm servers add does (the person's token only)", Status: 201, Body: true}},
		}, Add),
		op.New(op.Meta{
			Name: "servers_rm", Path: []string{"servers", "rm"},
			Callers: op.PersonOnly,
			Summary: "Remove a server from the configuration (a running gateway stops it)", Args: []string{"name"},
			Effect: op.Destructive, Idempotent: true, CLIOnly: true,
			HTTP: []op.Route{{Method: "DELETE", Path: "/api/servers/{name}", Summary: "Remove a server from the configuration; the gateway stops it (the person's token only)"}},
		}, Remove),
		op.New(op.Meta{
			Name: "servers_enable", Path: []string{"servers", "enable"},
			Callers: op.PersonOnly,
			Summary: "Enable a server: the gateway serves it again", Args: []string{"name"},
			Effect: op.Mutating, Idempotent: true, CLIOnly: true,
		}, Enable),
		op.New(op.Meta{
			Name: "servers_disable", Path: []string{"servers", "disable"},
			Callers: op.PersonOnly,
			Summary: "Disable a server: the gateway stops it and leaves it out of /mcp", Args: []string{"name"},
			Effect: op.Mutating, Idempotent: true, CLIOnly: true,
		}, Disable),
		op.New(op.Meta{
			Name: "servers_import", Path: []string{"servers", "import"},
			Callers: op.PersonOnly,
			Summary: "Import the servers another MCP client is configured with",
			Description: "--from names a client (claude-desktop, claude-code, vscode, cursor) or a file in the mcpServers or servers shape. " +
				"A client's user-wide file is read first, then the current project's (.mcp.json, .vscode/mcp.json, .cursor/mcp.json, " +
				"and the servers Claude Code keeps for this directory in ~/.claude.json). " +
				"Servers already configured in lm are kept and reported as skipped, as are entries lm cannot run.",
			Examples: "lm servers import --from claude-code\nlm servers import --from ~/.cursor/mcp.json",
			Effect:   op.Mutating, CLIOnly: true,
		}, Import),
		op.New(op.Meta{
			Name: "servers_export", Path: []string{"servers", "export"},
			Callers: op.PersonOnly,
			Summary: "Print a client configuration that points the client at lm's gateway",
			Description: "Claude Desktop launches only stdio servers, so its entry runs `lm mcp --connect URL`; the others connect to the URL. " +
				"Each sends an agent token, made with `lm gateway token add NAME` and never written into the file: Claude Code reads it from $LM_AGENT_TOKEN, " +
				"Cursor from ${env:LM_AGENT_TOKEN}, VS Code asks for it once; for Claude Desktop, paste it into the entry's LM_API_TOKEN. " +
				"--via stdio points the client at `lm mcp` instead (lm's own tools, without the hub). The URL is the running gateway's, else the default.",
			Examples: "lm servers export --for claude-desktop\nlm servers export --for vscode > .vscode/mcp.json",
			Effect:   op.ReadOnly, Idempotent: true,
		}, Export),
		op.New(op.Meta{
			Name: "servers_install", Path: []string{"servers", "install"},
			Callers: op.PersonOnly,
			Summary: "Install an MCP server from npm under LM_HOME and add it",
			Description: "Runs npm install into $LM_HOME/node and records the package's command. Needs Node.js and npm. " +
				"npm runs no install scripts (--ignore-scripts) unless --allow-scripts says so: they would run the package's code before anyone looked at it.",
			Examples: "lm servers install @modelcontextprotocol/server-memory\nlm servers install @modelcontextprotocol/server-everything --name everything --auto-start",
			Args:     []string{"package"},
			Effect:   op.Mutating, CLIOnly: true,
			HTTP: []op.Route{{Method: "POST", Path: "/api/servers/install", Summary: "Install a server from npm and add it, as lm servers install does (the person's token only)", Status: 201, Body: true}},
		}, InstallOp),
		op.New(op.Meta{
			Name: "servers_secret_set", Path: []string{"servers", "secret", "set"},
			Callers: op.PersonOnly,
			Summary: "Store a secret for ${secret:NAME} references, its value read from stdin",
			Description: "The value comes from stdin (or --input), never from an argument, which other users see in ps and shell history keeps; " +
				"trailing newlines are dropped. It goes to the OS keyring (service lm, account NAME) unless --file keeps it in " +
				"$LM_HOME/secrets.json (mode 0600), which is looked up first. Servers get it at their next start.",
			Examples: "lm servers secret set github_token < token.txt\nprintf %s \"$TOKEN\" | lm servers secret set github_token --file",
			Args:     []string{"name"}, StdinText: "value",
			Effect: op.Destructive, Idempotent: true, CLIOnly: true,
		}, SetSecret),
		op.New(op.Meta{
			Name: "servers_secret_rm", Path: []string{"servers", "secret", "rm"},
			Callers: op.PersonOnly,
			Summary: "Remove a secret from the secrets file and the OS keyring (--file or --keyring: from one only)",
			Args:    []string{"name"},
			Effect:  op.Destructive, Idempotent: true, CLIOnly: true,
		}, RemoveSecret),
		op.New(op.Meta{
			Name: "servers_secret_list", Path: []string{"servers", "secret", "list"},
			Callers: op.PersonOnly,
			Summary: "List secrets by name (those servers reference and those in the secrets file) and where each is stored",
			Description: "in lists the stores holding each secret in lookup order, so a start uses the first; an empty in means a server " +
				"that references it fails to start. Secrets only in the OS keyring are listed when a server references them.",
			Effect: op.ReadOnly, Idempotent: true,
		}, ListSecrets),
		op.New(op.Meta{
			Name: "servers_start", Path: []string{"servers", "start"},
			Callers: op.PersonOnly,
			Summary: "Start a server in the running gateway and wait until it is ready", Args: []string{"name"},
			Effect: op.Mutating, Idempotent: true,
		}, control("start")),
		op.New(op.Meta{
			Name: "servers_stop", Path: []string{"servers", "stop"},
			Callers: op.PersonOnly,
			Summary: "Stop a server in the running gateway (SIGTERM, then SIGKILL, to its process group)", Args: []string{"name"},
			Effect: op.Destructive, Idempotent: true,
		}, control("stop")),
		op.New(op.Meta{
			Name: "servers_restart", Path: []string{"servers", "restart"},
			Callers: op.PersonOnly,
			Summary: "Restart a server in the running gateway", Args: []string{"name"},
			Effect: op.Destructive,
		}, control("restart")),
		op.New(op.Meta{
			Name: "servers_status", Path: []string{"servers", "status"},
			Callers:     op.Agents,
			Summary:     "Show the running gateway's servers: state, pid, restarts, last error, breaker; and the cache",
			Description: "Exits 6 when no gateway is running.",
			Args:        []string{"name"},
			Effect:      op.ReadOnly, Idempotent: true,
		}, Statuses),
		op.New(op.Meta{
			Name: "servers_logs", Path: []string{"servers", "logs"},
			Callers:     op.PersonOnly,
			Summary:     "Print a server's stderr as the gateway recorded it",
			Description: "--follow (-f) prints lines as JSON Lines as they are written (CLI only).",
			Args:        []string{"name"},
			// --tail N counts lines, as on jobs logs.
			Aliases: map[string][]string{"follow": {"f"}, "lines": {"tail"}},
			Effect:  op.ReadOnly, Idempotent: true,
		}, Logs),
	}
}

// NameInput names one server.
type NameInput struct {
	Name string `json:"name" jsonschema:"the server's name"`
}

// Entry is a configured server and, with a gateway running, its state.
type Entry struct {
	Name   string  `json:"name"`
	Config *Server `json:"config"`
	Status *Status `json:"status,omitempty"`
}

// ListOutput lists servers.
type ListOutput struct {
	Servers        []Entry `json:"servers"`
	File           string  `json:"file"`
	GatewayRunning bool    `json:"gateway_running"`
}

// ListInput takes nothing.
type ListInput struct{}

// List is servers_list.
func List(ctx context.Context, env *op.Env, _ ListInput) (ListOutput, error) {
	cfg, err := loadOp(env.Home)
	if err != nil {
		return ListOutput{}, err
	}
	statuses, running := gatewayStatuses(ctx, env.Home)
	out := ListOutput{Servers: []Entry{}, File: Path(env.Home), GatewayRunning: running}
	for _, name := range cfg.Names() {
		e := Entry{Name: name, Config: cfg.Servers[name].Redacted()}
		if s, ok := statuses[name]; ok {
			e.Status = &s
		}
		out.Servers = append(out.Servers, e)
	}
	return out, nil
}

// Show is servers_show.
func Show(ctx context.Context, env *op.Env, in NameInput) (Entry, error) {
	cfg, err := loadOp(env.Home)
	if err != nil {
		return Entry{}, err
	}
	s, err := lookup(cfg, env.Home, in.Name)
	if err != nil {
		return Entry{}, err
	}
	e := Entry{Name: in.Name, Config: s.Redacted()}
	statuses, _ := gatewayStatuses(ctx, env.Home)
	if st, ok := statuses[in.Name]; ok {
		e.Status = &st
	}
	return e, nil
}

func loadOp(home string) (*Config, error) {
	cfg, err := Load(home)
	var ce *ConfigError
	if errors.As(err, &ce) {
		return nil, op.Errorf(op.KindInvalid, "%w", err).WithCategory("invalid_config").WithHint("fix the file, or see 'lm servers add --help'")
	}
	return cfg, err
}

// Find returns the configured server named name with its ${env:NAME} and
// ${secret:NAME} references resolved, for clients that start or reach it
// themselves.
// The caller's environment (env.Environ) fills ${env:NAME}.
func Find(ctx context.Context, env *op.Env, name string) (*Server, error) {
	home := env.Home
	cfg, err := loadOp(home)
	if err != nil {
		return nil, err
	}
	s, err := lookup(cfg, home, name)
	if err != nil {
		return nil, err
	}
	if !s.IsEnabled() {
		return nil, op.Errorf(op.KindUnavailable, "server %q is disabled", name).WithHint("lm servers enable %s", name)
	}
	r, _, err := s.Resolved(NewResolver(ctx, home, env.Environ))
	if err != nil {
		return nil, op.Errorf(op.KindInvalid, "server %q: %w", name, err)
	}
	return r, nil
}

// Names lists the configured servers' names, sorted.
func Names(home string) ([]string, error) {
	cfg, err := loadOp(home)
	if err != nil {
		return nil, err
	}
	return cfg.Names(), nil
}

func lookup(cfg *Config, home, name string) (*Server, error) {
	s, ok := cfg.Servers[name]
	if !ok {
		return nil, op.Errorf(op.KindNotFound, "no server named %q in %s", name, Path(home)).
			WithHint("see 'lm servers list'")
	}
	return s, nil
}

// gatewayStatuses asks a running gateway for its servers' states.
func gatewayStatuses(ctx context.Context, home string) (map[string]Status, bool) {
	var out StatusOutput
	if err := NewControl(home).Do(ctx, http.MethodGet, "/servers", nil, &out); err != nil {
		return nil, false
	}
	m := map[string]Status{}
	for _, s := range out.Servers {
		m[s.Name] = s
	}
	return m, true
}

// AddInput is servers_add's input.
type AddInput struct {
	Name        string   `json:"name" jsonschema:"the server's name: letters, digits, - and _"`
	Command     []string `json:"command,omitempty" jsonschema:"the program and its arguments (stdio)"`
	URL         string   `json:"url,omitempty" jsonschema:"the server's URL (streamable HTTP, or SSE with --transport sse)"`
	Transport   string   `json:"transport,omitempty" jsonschema:"stdio, http or sse (inferred from command or url)"`
	Env         []string `json:"env,omitempty" jsonschema:"environment variables for the server, each as NAME=VALUE (repeatable)"`
	Description string   `json:"description,omitempty" jsonschema:"what the server is for, shown in lists and on the dashboard"`
	AutoStart   bool     `json:"auto_start,omitempty" jsonschema:"start it when the gateway starts"`
	Disabled    bool     `json:"disabled,omitempty" jsonschema:"add it disabled"`
	Replace     bool     `json:"replace,omitempty" jsonschema:"replace a server of the same name"`
}

// Validate checks what the schema cannot.
func (in AddInput) Validate() error {
	if (len(in.Command) == 0) == (in.URL == "") {
		return op.Errorf(op.KindInvalid, "give either a command (after --) or --url").
			WithHint("lm servers add NAME -- npx -y PACKAGE, or lm servers add NAME --url https://…/mcp")
	}
	for _, kv := range in.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return op.Errorf(op.KindInvalid, "env %q is not NAME=VALUE", kv)
		}
	}
	return nil
}

// RefineSchema lists the transports.
func (AddInput) RefineSchema(s *jsonschema.Schema) {
	s.Properties["transport"].Enum = []any{Stdio, HTTP, SSE}
}

// Changed is what a configuration change did.
type Changed struct {
	Name   string  `json:"name"`
	Config *Server `json:"config,omitempty"`
	Done   string  `json:"done" jsonschema:"added, replaced, removed, enabled or disabled"`
}

// Add is servers_add.
func Add(ctx context.Context, env *op.Env, in AddInput) (Changed, error) {
	s := &Server{URL: in.URL, Transport: in.Transport, Description: in.Description, AutoStart: in.AutoStart}
	if len(in.Command) > 0 {
		s.Command, s.Args = in.Command[0], in.Command[1:]
	}
	if in.Disabled {
		s.Enabled = new(bool)
	}
	for _, kv := range in.Env {
		k, v, _ := strings.Cut(kv, "=")
		if s.Env == nil {
			s.Env = map[string]string{}
		}
		s.Env[k] = v
	}
	done := "added"
	_, err := update(env.Home, func(cfg *Config) error {
		if _, exists := cfg.Servers[in.Name]; exists {
			if !in.Replace {
				return op.Errorf(op.KindConflict, "a server named %q is already configured", in.Name).
					WithHint("pass --replace to replace it, or choose another name")
			}
			done = "replaced"
		}
		cfg.Servers[in.Name] = s
		return nil
	})
	if err != nil {
		return Changed{}, err
	}
	return Changed{Name: in.Name, Config: s.Redacted(), Done: done}, Reload(ctx, env.Home)
}

// update is [Update] with errors classified for the CLI.
func update(home string, change func(*Config) error) (*Config, error) {
	cfg, err := Update(home, change)
	var ce *ConfigError
	if errors.As(err, &ce) {
		return nil, op.Errorf(op.KindInvalid, "%w", err).WithCategory("invalid_config")
	}
	return cfg, err
}

// Remove is servers_rm.
func Remove(ctx context.Context, env *op.Env, in NameInput) (Changed, error) {
	_, err := update(env.Home, func(cfg *Config) error {
		if _, err := lookup(cfg, env.Home, in.Name); err != nil {
			return err
		}
		delete(cfg.Servers, in.Name)
		return nil
	})
	if err != nil {
		return Changed{}, err
	}
	return Changed{Name: in.Name, Done: "removed"}, Reload(ctx, env.Home)
}

// Enable is servers_enable.
func Enable(ctx context.Context, env *op.Env, in NameInput) (Changed, error) {
	return setEnabled(ctx, env, in.Name, true)
}

// Disable is servers_disable.
func Disable(ctx context.Context, env *op.Env, in NameInput) (Changed, error) {
	return setEnabled(ctx, env, in.Name, false)
}

func setEnabled(ctx context.Context, env *op.Env, name string, on bool) (Changed, error) {
	var s *Server
	_, err := update(env.Home, func(cfg *Config) error {
		var err error
		if s, err = lookup(cfg, env.Home, name); err != nil {
			return err
		}
		s.Enabled = nil // enabled is the default, so it is not written
		if !on {
			s.Enabled = new(bool)
		}
		return nil
	})
	if err != nil {
		return Changed{}, err
	}
	done := map[bool]string{true: "enabled", false: "disabled"}[on]
	return Changed{Name: name, Config: s.Redacted(), Done: done}, Reload(ctx, env.Home)
}
