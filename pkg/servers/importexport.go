package servers

import (
	"context"
	"net/url"
	"os"

	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/gatewayd"
	"lmtool.dev/lm/pkg/op"
)

// Import and export: servers_import copies the servers another MCP client
// configures (Claude Desktop, Claude Code, VS Code, Cursor, or a file in
// their shape) into servers.json, skipping and reporting each entry it
// cannot take, never overwriting one already configured; servers_export
// writes the entry a client needs to reach lm (or one server through lm).
// Reading the clients' files is clients.go's.

// ImportInput is servers_import's input.
type ImportInput struct {
	From string `json:"from" jsonschema:"claude-desktop, claude-code, vscode, cursor, or a file path"`
}

// ImportOutput reports an import.
type ImportOutput struct {
	Files    []string  `json:"files" jsonschema:"the files read"`
	Imported []string  `json:"imported"`
	Skipped  []Skipped `json:"skipped"`
	// Servers says what each imported server runs or reaches: a project's
	// file is anyone's who wrote the repository, and the gateway starts
	// what it names.
	Servers []Imported `json:"servers" jsonschema:"each imported server: what it runs (command and args) or reaches (url), and whether the gateway starts it on its own"`
}

// Imported is one server an import added, as the person should see it
// before the gateway runs it.
type Imported struct {
	Name      string   `json:"name"`
	From      string   `json:"from"`
	Command   string   `json:"command,omitempty"`
	Args      []string `json:"args,omitempty"`
	URL       string   `json:"url,omitempty"`
	AutoStart bool     `json:"auto_start"`
}

// Import is servers_import.
func Import(ctx context.Context, env *op.Env, in ImportInput) (ImportOutput, error) {
	found, skipped, files, err := ReadClient(in.From)
	if err != nil {
		return ImportOutput{}, err
	}
	out := ImportOutput{Files: files, Imported: []string{}, Skipped: skipped, Servers: []Imported{}}
	if out.Skipped == nil {
		out.Skipped = []Skipped{}
	}
	_, err = update(env.Home, func(cfg *Config) error {
		for _, f := range found {
			if _, exists := cfg.Servers[f.Name]; exists {
				out.Skipped = append(out.Skipped, Skipped{Name: f.Name, From: f.From, Reason: "already configured in lm"})
				continue
			}
			cfg.Servers[f.Name] = f.Server
			out.Imported = append(out.Imported, f.Name)
			out.Servers = append(out.Servers, Imported{Name: f.Name, From: f.From, Command: f.Server.Command,
				Args: f.Server.Args, URL: f.Server.URL, AutoStart: f.Server.AutoStart})
		}
		return nil
	})
	if err != nil {
		return ImportOutput{}, err
	}
	return out, Reload(ctx, env.Home)
}

// ExportInput is servers_export's input.
type ExportInput struct {
	For string `json:"for" jsonschema:"the client: claude-desktop, claude-code, vscode or cursor"`
	Via string `json:"via,omitempty" jsonschema:"gateway (default: the hub at /mcp) or stdio (lm mcp, lm's own tools only)"`
	URL string `json:"url,omitempty" jsonschema:"the gateway's MCP URL (default: the running gateway's, else http://127.0.0.1:7437/mcp)"`
}

// RefineSchema lists the clients.
func (ExportInput) RefineSchema(s *jsonschema.Schema) {
	s.Properties["for"].Enum = []any{"claude-desktop", "claude-code", "vscode", "cursor"}
	s.Properties["via"].Enum = []any{"gateway", "stdio"}
}

// ExportOutput is a client's configuration file content.
type ExportOutput struct {
	Inputs     []map[string]any `json:"inputs,omitempty"`
	MCPServers map[string]any   `json:"mcpServers,omitempty"`
	Servers    map[string]any   `json:"servers,omitempty"`
}

// Export is servers_export.
func Export(_ context.Context, env *op.Env, in ExportInput) (ExportOutput, error) {
	u := in.URL
	if u == "" {
		u = "http://127.0.0.1:7437/mcp"
		if st, ok, _ := (gatewayd.Files{Dir: env.Home}).Running(); ok {
			u = "http://" + st.Addr + "/mcp"
		}
	} else if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") {
		return ExportOutput{}, op.Errorf(op.KindInvalid, "url %q is not an http URL", u)
	}
	lm, err := os.Executable()
	if err != nil {
		lm = "lm"
	}
	cfg, err := ClientConfig(in.For, in.Via, u, lm)
	if err != nil {
		return ExportOutput{}, err
	}
	var out ExportOutput
	if v, ok := cfg["mcpServers"].(map[string]any); ok {
		out.MCPServers = v
	}
	if v, ok := cfg["servers"].(map[string]any); ok {
		out.Servers = v
	}
	if v, ok := cfg["inputs"].([]map[string]any); ok {
		out.Inputs = v
	}
	return out, nil
}
