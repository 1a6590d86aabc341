package servers

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"

	"lmtool.dev/lm/pkg/op"
)

// Other MCP clients' configuration files: where each keeps its servers
// (user-wide files first), reading their entries in the shape each uses
// (reporting what cannot be taken rather than guessing), and the entry a
// client needs to reach lm. Nothing here writes a client's file.

// Clients are the MCP clients whose configuration lm imports and exports.
var Clients = []string{"claude-desktop", "claude-code", "vscode", "cursor"}

// clientFiles are where a client keeps its servers, user-wide files first;
// relative paths are in the current directory.
func clientFiles(client string) ([]string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("find the home directory: %w", err)
	}
	config, err := os.UserConfigDir()
	if err != nil {
		config = filepath.Join(home, ".config")
	}
	switch client {
	case "claude-desktop":
		if runtime.GOOS == "darwin" {
			return []string{filepath.Join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json")}, nil
		}
		return []string{filepath.Join(config, "Claude", "claude_desktop_config.json")}, nil
	case "claude-code":
		return []string{filepath.Join(home, ".claude.json"), ".mcp.json"}, nil
	case "vscode":
		return []string{filepath.Join(config, "Code", "User", "mcp.json"), filepath.Join(".vscode", "mcp.json")}, nil
	case "cursor":
		return []string{filepath.Join(home, ".cursor", "mcp.json"), filepath.Join(".cursor", "mcp.json")}, nil
	}
	return nil, op.Errorf(op.KindInvalid, "unknown client %q", client).WithHint("use one of %v, or a file path", Clients)
}

// Skipped is a server an import left out, and why.
type Skipped struct {
	Name   string `json:"name"`
	From   string `json:"from"`
	Reason string `json:"reason"`
}

// Found is a server read from a client's file.
type Found struct {
	Name   string
	From   string
	Server *Server
}

// ReadClient reads the servers a client (or a file, when source is a path)
// configures. A client file that does not exist is skipped; an entry that
// lm cannot run is reported in skipped, never fatal to the others.
func ReadClient(source string) (found []Found, skipped []Skipped, files []string, err error) {
	paths := []string{source}
	explicit := true
	if _, statErr := os.Stat(source); statErr != nil {
		if paths, err = clientFiles(source); err != nil {
			return nil, nil, nil, err
		}
		explicit = false
	}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) && !explicit {
			continue
		}
		if err != nil {
			return nil, nil, nil, op.Errorf(op.KindNotFound, "read %s: %w", path, err)
		}
		files = append(files, path)
		var top map[string]json.RawMessage
		if err := json.Unmarshal(data, &top); err != nil {
			return nil, nil, nil, op.Errorf(op.KindInvalid, "%s is not a JSON object: %v", path, err)
		}
		// A client's file holds much besides its servers (~/.claude.json
		// especially): only the servers are read.
		sections := []map[string]json.RawMessage{top}
		if project := projectSection(top); project != nil {
			sections = append(sections, project)
		}
		for _, section := range sections {
			f, s, err := readServers(path, section)
			if err != nil {
				return nil, nil, nil, err
			}
			found, skipped = append(found, f...), append(skipped, s...)
		}
	}
	if len(files) == 0 {
		return nil, nil, nil, op.Errorf(op.KindNotFound, "no %s configuration found (looked at %v)", source, paths)
	}
	return found, skipped, files, nil
}

// projectSection is the current directory's entry in ~/.claude.json's
// "projects": where Claude Code keeps the servers added with its default
// (local) scope. Nil when there is none.
func projectSection(top map[string]json.RawMessage) map[string]json.RawMessage {
	raw, ok := top["projects"]
	if !ok {
		return nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil
	}
	var projects map[string]map[string]json.RawMessage
	if json.Unmarshal(raw, &projects) != nil {
		return nil
	}
	return projects[wd]
}

// readServers reads the servers of one section of a client's file: its
// "mcpServers" (Claude, Cursor) or "servers" (VS Code) object.
func readServers(path string, section map[string]json.RawMessage) (found []Found, skipped []Skipped, err error) {
	for _, key := range []string{"mcpServers", "servers"} {
		raw, ok := section[key]
		if !ok {
			continue
		}
		var entries map[string]json.RawMessage
		if err := json.Unmarshal(raw, &entries); err != nil {
			return nil, nil, op.Errorf(op.KindInvalid, "%s: %s must be an object of servers by name", path, key)
		}
		names := make([]string, 0, len(entries))
		for n := range entries {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			one, _ := json.Marshal(map[string]any{"mcpServers": map[string]json.RawMessage{name: entries[name]}})
			cfg, err := Parse(path, one)
			if err != nil {
				skipped = append(skipped, Skipped{Name: name, From: path, Reason: err.Error()})
				continue
			}
			found = append(found, Found{Name: name, From: path, Server: cfg.Servers[name]})
		}
	}
	return found, skipped, nil
}

// AgentTokenEnv is the environment variable the exported configurations of
// Claude Code and Cursor take the agent's gateway token from; the person
// makes the token with `lm gateway token add NAME`.
const AgentTokenEnv = "LM_AGENT_TOKEN"

// agentTokenInput is the VS Code input that asks for the agent's token.
const agentTokenInput = "lm-agent-token"

// ClientConfig is the configuration that points a client at lm: the
// gateway's /mcp URL with an agent token in the Authorization header,
// through `lm mcp --connect` for clients that launch only stdio servers
// (Claude Desktop), or `lm mcp` itself when via is "stdio" (lm's own
// tools, no hub). Each client takes the token the way it can without the
// token being written into the file: from the environment, or by asking.
func ClientConfig(client, via, url, lm string) (map[string]any, error) {
	var entry map[string]any
	switch {
	case via == "stdio":
		entry = map[string]any{"command": lm, "args": []string{"mcp"}}
	case client == "claude-desktop":
		// Claude Desktop expands nothing: the token goes in by hand.
		entry = map[string]any{"command": lm, "args": []string{"mcp", "--connect", url},
			"env": map[string]string{"LM_API_TOKEN": "AGENT_TOKEN from 'lm gateway token add claude-desktop'"}}
	case client == "cursor":
		entry = map[string]any{"url": url, "headers": map[string]string{"Authorization": "Bearer ${env:" + AgentTokenEnv + "}"}}
	case client == "vscode":
		entry = map[string]any{"type": "http", "url": url, "headers": map[string]string{"Authorization": "Bearer ${input:" + agentTokenInput + "}"}}
	default:
		entry = map[string]any{"type": "http", "url": url, "headers": map[string]string{"Authorization": "Bearer ${" + AgentTokenEnv + "}"}}
	}
	if via == "stdio" && client == "vscode" {
		entry["type"] = "stdio"
	}
	switch client {
	case "vscode":
		cfg := map[string]any{"servers": map[string]any{"lm": entry}}
		if via != "stdio" {
			cfg["inputs"] = []map[string]any{{"id": agentTokenInput, "type": "promptString", "password": true,
				"description": "lm gateway agent token (lm gateway token add vscode)"}}
		}
		return cfg, nil
	case "claude-desktop", "claude-code", "cursor":
		return map[string]any{"mcpServers": map[string]any{"lm": entry}}, nil
	}
	return nil, op.Errorf(op.KindInvalid, "unknown client %q", client).WithHint("use one of %v", Clients)
}
