package tasks

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// taskfileNames are every name go-task looks for, in its order.
var taskfileNames = []string{
	"Taskfile.yml", "taskfile.yml", "Taskfile.yaml", "taskfile.yaml",
	"Taskfile.dist.yml", "taskfile.dist.yml", "Taskfile.dist.yaml", "taskfile.dist.yaml",
}

// findTaskfile reads the Taskfile and its local includes, whose tasks are
// namespaced ns:task. Remote and templated includes are left out; internal
// tasks are hidden as `task --list-all` hides them.
func findTaskfile(f files) ([]Task, error) {
	dir := f.dir
	path := f.firstExisting(dir, taskfileNames...)
	if path == "" {
		return nil, nil
	}
	var tasks []Task
	err := readTaskfile(f, path, "", map[string]bool{}, &tasks)
	return tasks, err
}

func readTaskfile(f files, path, ns string, seen map[string]bool, out *[]Task) error {
	if seen[path] {
		return nil
	}
	seen[path] = true
	data, err := f.readFile(path)
	if err != nil {
		return parseErr(path, err)
	}
	var doc struct {
		Tasks    yaml.Node `yaml:"tasks"`
		Includes yaml.Node `yaml:"includes"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return parseErr(path, err)
	}
	for name, def := range mappingPairs(&doc.Tasks) {
		var t struct {
			Desc     string `yaml:"desc"`
			Summary  string `yaml:"summary"`
			Internal bool   `yaml:"internal"`
		}
		if def.Kind == yaml.MappingNode {
			if err := def.Decode(&t); err != nil {
				return parseErr(path, fmt.Errorf("task %s: %w", name, err))
			}
		}
		if t.Internal {
			continue
		}
		full := ns + name
		desc := t.Desc
		if desc == "" {
			desc = strings.TrimSpace(t.Summary)
		}
		*out = append(*out, newTask("task", full, path, desc, "task", full))
	}
	for name, def := range mappingPairs(&doc.Includes) {
		var inc struct {
			Taskfile string `yaml:"taskfile"`
		}
		if def.Kind == yaml.ScalarNode {
			inc.Taskfile = def.Value
		} else if err := def.Decode(&inc); err != nil {
			return parseErr(path, fmt.Errorf("include %s: %w", name, err))
		}
		target := inc.Taskfile
		if target == "" || strings.Contains(target, "{{") || strings.Contains(target, "://") {
			continue
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		if st, err := f.stat(target); err == nil && st.IsDir() {
			target = f.firstExisting(target, taskfileNames...)
		}
		if target == "" {
			continue
		}
		if _, err := f.stat(target); err != nil {
			continue // optional or missing includes do not hide the rest
		}
		if err := readTaskfile(f, target, ns+name+":", seen, out); err != nil {
			return err
		}
	}
	return nil
}

// mappingPairs iterates a YAML mapping's keys and values in document order.
func mappingPairs(n *yaml.Node) func(func(string, *yaml.Node) bool) {
	return func(yield func(string, *yaml.Node) bool) {
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !yield(n.Content[i].Value, n.Content[i+1]) {
				return
			}
		}
	}
}

// findActions lists GitHub Actions workflows, one task per file, run
// locally by act.
func findActions(f files) ([]Task, error) {
	dir := f.dir
	var tasks []Task
	var unreadable []error
	for _, sub := range []string{".github/workflows", "workflows", "custom/workflows", ".gitlab/workflows"} {
		entries, err := f.listIfExists(filepath.Join(dir, sub))
		if err != nil {
			unreadable = append(unreadable, err)
		}
		for _, e := range entries {
			ext := filepath.Ext(e.Name())
			if e.IsDir() || (ext != ".yml" && ext != ".yaml") {
				continue
			}
			path := filepath.Join(dir, sub, e.Name())
			var wf struct {
				Name string `yaml:"name"`
			}
			if data, err := f.readFile(path); err == nil {
				yaml.Unmarshal(data, &wf) // the name is only a description
			}
			rel := filepath.Join(sub, e.Name())
			tasks = append(tasks, newTask("act", strings.TrimSuffix(e.Name(), ext), path, wf.Name, "act", "-W", rel))
		}
	}
	return tasks, errors.Join(unreadable...)
}

// findCompose reads the first Docker Compose file: up, down and one run
// task per service.
func findCompose(f files) ([]Task, error) {
	dir := f.dir
	path := f.firstExisting(dir, "docker-compose.yml", "docker-compose.yaml", "compose.yml", "compose.yaml")
	explicit := false
	if path == "" {
		matches, _ := filepath.Glob(filepath.Join(dir, "docker-compose.*.y*ml"))
		if len(matches) == 0 {
			return nil, nil
		}
		path, explicit = matches[0], true
	}
	data, err := f.readFile(path)
	if err != nil {
		return nil, parseErr(path, err)
	}
	var doc struct {
		Services yaml.Node `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, parseErr(path, err)
	}
	base := []string{"docker", "compose"}
	if explicit {
		base = append(base, "-f", filepath.Base(path))
	}
	cmd := func(args ...string) []string { return append(append([]string(nil), base...), args...) }
	tasks := []Task{
		newTask("docker compose", "up", path, "start every service", cmd("up")...),
		newTask("docker compose", "down", path, "stop and remove every service", cmd("down")...),
	}
	for svc := range mappingPairs(&doc.Services) {
		tasks = append(tasks, newTask("docker compose", svc, path, "run the "+svc+" service", cmd("run", svc)...))
	}
	return tasks, nil
}
