package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// findNode reads package.json scripts, run by the package manager the
// project uses: the packageManager field, else its lockfile, else npm.
func findNode(f files) ([]Task, error) {
	dir := f.dir
	path := filepath.Join(dir, "package.json")
	data, ok, err := f.readIfExists(path)
	if !ok {
		return nil, err
	}
	var pkg struct {
		Scripts        json.RawMessage `json:"scripts"`
		PackageManager string          `json:"packageManager"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		return nil, parseErr(path, err)
	}
	pm := packageManager(f, pkg.PackageManager)
	var tasks []Task
	err = eachKey(pkg.Scripts, func(name string, raw json.RawMessage) error {
		var script string
		if err := json.Unmarshal(raw, &script); err != nil {
			return fmt.Errorf("script %q is not a string", name)
		}
		tasks = append(tasks, newTask(pm, name, path, script, pm, "run", name))
		return nil
	})
	if err != nil {
		return nil, parseErr(path, err)
	}
	return tasks, nil
}

// packageManager decides from the project's files alone, so the same
// checkout gives the same names everywhere.
func packageManager(f files, field string) string {
	if name, _, _ := strings.Cut(field, "@"); name != "" {
		switch name {
		case "npm", "yarn", "pnpm", "bun":
			return name
		}
	}
	for _, lock := range []struct{ file, pm string }{
		{"package-lock.json", "npm"}, {"yarn.lock", "yarn"}, {"pnpm-lock.yaml", "pnpm"},
		{"bun.lockb", "bun"}, {"bun.lock", "bun"},
	} {
		if _, err := f.stat(filepath.Join(f.dir, lock.file)); err == nil {
			return lock.pm
		}
	}
	return "npm"
}

// eachKey visits a JSON object's members in document order (maps would
// lose the order the author chose). A missing or null object is empty.
func eachKey(raw json.RawMessage, fn func(key string, value json.RawMessage) error) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("want an object, got %v", tok)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return err
		}
		if err := fn(tok.(string), value); err != nil {
			return err
		}
	}
	return nil
}
