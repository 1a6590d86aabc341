package tasks

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// findCargo reads the aliases in .cargo/config.toml and cargo-make's
// Makefile.toml tasks.
func findCargo(f files) ([]Task, error) {
	dir := f.dir
	var tasks []Task
	if path := f.firstExisting(dir, ".cargo/config.toml", ".cargo/config"); path != "" {
		var cfg struct {
			Alias map[string]any `toml:"alias"`
		}
		data, err := f.readFile(path)
		if err == nil {
			err = toml.Unmarshal(data, &cfg)
		}
		if err != nil {
			return nil, parseErr(path, err)
		}
		for _, name := range sortedNames(cfg.Alias) {
			tasks = append(tasks, newTask("cargo", name, path, describe(cfg.Alias[name]), "cargo", name))
		}
	}
	if path := f.firstExisting(dir, "Makefile.toml"); path != "" {
		var mk struct {
			Tasks map[string]struct {
				Description string `toml:"description"`
				Private     bool   `toml:"private"`
			} `toml:"tasks"`
		}
		data, err := f.readFile(path)
		if err == nil {
			err = toml.Unmarshal(data, &mk)
		}
		if err != nil {
			return tasks, parseErr(path, err)
		}
		for _, name := range sortedNames(mk.Tasks) {
			if !mk.Tasks[name].Private {
				tasks = append(tasks, newTask("cargo-make", name, path, mk.Tasks[name].Description, "cargo", "make", name))
			}
		}
	}
	return tasks, nil
}

var miseDescription = regexp.MustCompile(`^#\s*(?:MISE|\[MISE\])\s+description\s*=\s*"(.*)"`)

// mise's project configuration files and file-task directories.
var (
	miseConfigs  = []string{"mise.toml", ".mise.toml", "mise/config.toml", ".mise/config.toml", ".config/mise.toml"}
	miseTaskDirs = []string{"mise-tasks", ".mise-tasks", "mise/tasks", ".mise/tasks", ".config/mise/tasks"}
)

// findMise reads [tasks] in mise's config files and the file tasks in its
// task directories.
func findMise(f files) ([]Task, error) {
	dir := f.dir
	var tasks []Task
	seen := map[string]bool{}
	add := func(t Task) {
		if !seen[t.SourceName] {
			seen[t.SourceName] = true
			tasks = append(tasks, t)
		}
	}
	for _, name := range miseConfigs {
		path := filepath.Join(dir, name)
		data, ok, err := f.readIfExists(path)
		if !ok {
			if err != nil {
				return tasks, parseErr(path, err)
			}
			continue
		}
		var cfg struct {
			Tasks map[string]any `toml:"tasks"`
		}
		if err := toml.Unmarshal(data, &cfg); err != nil {
			return tasks, parseErr(path, err)
		}
		for _, task := range sortedNames(cfg.Tasks) {
			if m, ok := cfg.Tasks[task].(map[string]any); ok && m["hide"] == true {
				continue
			}
			add(newTask("mise", task, path, describe(cfg.Tasks[task]), "mise", "run", task))
		}
	}
	var unreadable []error
	for _, sub := range miseTaskDirs {
		entries, err := f.listIfExists(filepath.Join(dir, sub))
		if err != nil {
			unreadable = append(unreadable, err)
		}
		for _, e := range entries {
			info, err := e.Info()
			if err != nil || !info.Mode().IsRegular() || info.Mode()&0o111 == 0 {
				continue
			}
			path := filepath.Join(dir, sub, e.Name())
			add(newTask("mise", e.Name(), path, fileTaskDescription(f, path), "mise", "run", e.Name()))
		}
	}
	return tasks, errors.Join(unreadable...)
}

func fileTaskDescription(f files, path string) string {
	data, err := f.readFile(path)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 0; sc.Scan() && n < 20; n++ {
		if m := miseDescription.FindStringSubmatch(sc.Text()); m != nil {
			return m[1]
		}
	}
	return ""
}

// findDeno reads the tasks of deno.json or deno.jsonc.
func findDeno(f files) ([]Task, error) {
	dir := f.dir
	path := f.firstExisting(dir, "deno.json", "deno.jsonc")
	if path == "" {
		return nil, nil
	}
	data, err := f.readFile(path)
	if err != nil {
		return nil, parseErr(path, err)
	}
	var doc struct {
		Tasks json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal(stripJSONC(data), &doc); err != nil {
		return nil, parseErr(path, err)
	}
	var tasks []Task
	err = eachKey(doc.Tasks, func(name string, raw json.RawMessage) error {
		var def any
		json.NewDecoder(bytes.NewReader(raw)).Decode(&def)
		desc := describe(def)
		if m, ok := def.(map[string]any); ok {
			if d, ok := m["description"].(string); ok {
				desc = d
			} else if c, ok := m["command"].(string); ok {
				desc = c
			}
		}
		tasks = append(tasks, newTask("deno", name, path, strings.TrimSpace(desc), "deno", "task", name))
		return nil
	})
	if err != nil {
		return nil, parseErr(path, err)
	}
	return tasks, nil
}
