package tasks

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// findPython reads pyproject.toml: [project.scripts] (uv), poetry scripts,
// poe tasks, pdm scripts and hatch environment scripts, in that order.
func findPython(f files) ([]Task, error) {
	dir := f.dir
	path := filepath.Join(dir, "pyproject.toml")
	data, ok, err := f.readIfExists(path)
	if !ok {
		return nil, err
	}
	var doc struct {
		Project struct {
			Scripts map[string]any `toml:"scripts"`
		} `toml:"project"`
		Tool struct {
			Poetry struct {
				Scripts map[string]any `toml:"scripts"`
			} `toml:"poetry"`
			Poe struct {
				Tasks map[string]any `toml:"tasks"`
			} `toml:"poe"`
			PDM struct {
				Scripts map[string]any `toml:"scripts"`
			} `toml:"pdm"`
			Hatch struct {
				Envs map[string]struct {
					Scripts map[string]any `toml:"scripts"`
				} `toml:"envs"`
			} `toml:"hatch"`
		} `toml:"tool"`
	}
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, parseErr(path, err)
	}
	var tasks []Task
	add := func(runner string, entries map[string]any, argv func(name string) []string) {
		for _, name := range sortedNames(entries) {
			if runner == "pdm" && name == "_" {
				continue // pdm's shared script options
			}
			tasks = append(tasks, newTask(runner, name, path, describe(entries[name]), argv(name)...))
		}
	}
	add("uv", doc.Project.Scripts, func(n string) []string { return []string{"uv", "run", n} })
	add("poetry", doc.Tool.Poetry.Scripts, func(n string) []string { return []string{"poetry", "run", n} })
	add("poe", doc.Tool.Poe.Tasks, func(n string) []string { return []string{"poe", n} })
	add("pdm", doc.Tool.PDM.Scripts, func(n string) []string { return []string{"pdm", "run", n} })
	envs := make([]string, 0, len(doc.Tool.Hatch.Envs))
	for env := range doc.Tool.Hatch.Envs {
		envs = append(envs, env)
	}
	sort.Strings(envs)
	sort.SliceStable(envs, func(i, j int) bool { return envs[i] == "default" && envs[j] != "default" })
	for _, env := range envs {
		scripts := doc.Tool.Hatch.Envs[env].Scripts
		for _, name := range sortedNames(scripts) {
			source := name
			if env != "default" {
				source = env + ":" + name
			}
			tasks = append(tasks, newTask("hatch", source, path, describe(scripts[name]), "hatch", "run", source))
		}
	}
	return tasks, nil
}

// describe turns a script definition into a description: a command string
// as is, a table's help or description, a list of commands joined.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		for _, k := range []string{"help", "description", "desc", "cmd", "shell", "call", "script"} {
			if s, ok := v[k].(string); ok {
				return s
			}
		}
	case []any:
		var parts []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, " && ")
	}
	return ""
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
