package tasks

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/privatefile"
)

// Scope is how much an allowlist entry covers, in dela's words.
type Scope string

// The scopes. Once is accepted for dela compatibility but never written.
const (
	ScopeDeny      Scope = "Deny"
	ScopeDirectory Scope = "Directory"
	ScopeFile      Scope = "File"
	ScopeTask      Scope = "Task"
	ScopeOnce      Scope = "Once"
)

// Allowlist is dela's allowlist file: entries naming a defining file or a
// directory, a scope and optionally source task names.
type Allowlist struct {
	Entries []Entry `toml:"entries" json:"entries"`
}

// Entry is one rule. Args, Env and Cwd widen what an agent may hand an
// allowed task (see [Check]); lm's own, not dela's.
type Entry struct {
	Path  string   `toml:"path" json:"path"`
	Scope Scope    `toml:"scope" json:"scope"`
	Tasks []string `toml:"tasks,omitempty" json:"tasks,omitempty"`
	// Args are patterns (* matches any run of characters) for the words an
	// agent may give a runner that reads them itself (make's targets and
	// VAR=value, mvn's goals…). Words other runners hand to the task need
	// none.
	Args []string `toml:"args,omitempty" json:"args,omitempty"`
	// Env names the environment variables an agent may set for the task.
	Env []string `toml:"env,omitempty" json:"env,omitempty"`
	// Cwd lists directories, relative to the task's file, an agent may run
	// the task in besides that file's own.
	Cwd []string `toml:"cwd,omitempty" json:"cwd,omitempty"`
}

// Namespaces name the two allowlists: MCP's (deny by default, read-only
// through MCP) and people's.
const (
	NamespaceMCP   = "mcp"
	NamespaceHuman = "human"
)

// AllowlistPath is where a namespace's allowlist lives in LM_HOME.
func AllowlistPath(home, namespace string) string {
	if namespace == NamespaceHuman {
		return filepath.Join(home, "allowlist.toml")
	}
	return filepath.Join(home, "mcp_allowlist.toml")
}

// LoadAllowlist reads an allowlist; a missing file is an empty list, which
// allows nothing. Unknown keys are errors, so a misspelt rule is not
// silently ignored.
func LoadAllowlist(path string) (Allowlist, []byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Allowlist{}, nil, nil
	}
	if err != nil {
		return Allowlist{}, nil, err
	}
	a, err := ParseAllowlist(data)
	if err != nil {
		return Allowlist{}, data, op.Errorf(op.KindInvalid, "allowlist %s: %v", path, err).
			WithHint("fix the file by hand; entries need path, scope (Deny, Directory, File, Task) and optional tasks")
	}
	return a, data, nil
}

// ParseAllowlist decodes allowlist TOML strictly.
func ParseAllowlist(data []byte) (Allowlist, error) {
	var a Allowlist
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		var strict *toml.StrictMissingError
		var decode *toml.DecodeError
		switch {
		case errors.As(err, &strict):
			return a, errors.New(strict.String())
		case errors.As(err, &decode):
			row, col := decode.Position()
			return a, fmt.Errorf("line %d column %d: %v", row, col, decode)
		}
		return a, err
	}
	for i, e := range a.Entries {
		switch e.Scope {
		case ScopeDeny, ScopeDirectory, ScopeFile, ScopeTask, ScopeOnce:
		default:
			return a, fmt.Errorf("entry %d: scope %q is not one of Deny, Directory, File, Task", i+1, e.Scope)
		}
		if e.Path == "" {
			return a, fmt.Errorf("entry %d: path is empty", i+1)
		}
	}
	return a, nil
}

// Verdict is what an allowlist says about a task.
type Verdict int

// The verdicts: no entry matched, an allow entry matched, a Deny entry
// matched.
const (
	Unlisted Verdict = iota
	Allowed
	Denied
)

// Allows reports whether the allowlist lets t run: only an allow entry
// that no Deny entry overrides does.
func (a Allowlist) Allows(t Task) bool { return a.Check(t) == Allowed }

// Check evaluates t as dela does: Deny entries first, then Directory, File
// and Task. Paths are compared after resolving symlinks, so a link cannot
// widen or dodge a rule.
func (a Allowlist) Check(t Task) Verdict {
	v, _ := a.Match(t)
	return v
}

// Match is [Check] with the entry that decided, when one allowed t.
func (a Allowlist) Match(t Task) (Verdict, Entry) {
	file := canonical(t.FilePath)
	named := func(e Entry) bool {
		return slices.Contains(e.Tasks, t.SourceName) || slices.Contains(e.Tasks, t.Name)
	}
	for _, e := range a.Entries {
		if e.Scope != ScopeDeny {
			continue
		}
		p := canonical(e.Path)
		if len(e.Tasks) == 0 && within(file, p) || len(e.Tasks) > 0 && file == p && named(e) {
			return Denied, Entry{}
		}
	}
	for _, scope := range []Scope{ScopeDirectory, ScopeFile, ScopeTask} {
		for _, e := range a.Entries {
			if e.Scope != scope {
				continue
			}
			p := canonical(e.Path)
			switch scope {
			case ScopeDirectory:
				if within(file, p) {
					return Allowed, e
				}
			case ScopeFile:
				if file == p {
					return Allowed, e
				}
			case ScopeTask:
				if file == p && named(e) {
					return Allowed, e
				}
			}
		}
	}
	return Unlisted, Entry{}
}

// PersonMayRun applies the human allowlist ($LM_HOME/allowlist.toml) to a
// task a person runs from the CLI. It is separate from MCP's and, unlike
// it, not deny-by-default: the person asked for the task, so only a Deny
// entry refuses it (a guard against running deploy by mistake); an allow
// entry or no entry lets it run. lm does not prompt where dela would.
func PersonMayRun(home string, t Task) error {
	path := AllowlistPath(home, NamespaceHuman)
	a, _, err := LoadAllowlist(path)
	if err != nil {
		return err
	}
	if a.Check(t) == Denied {
		return op.Errorf(op.KindDenied, "task %s (%s in %s) is denied by %s", t.Name, t.SourceName, t.FilePath, path).
			WithHint("remove its Deny entry from %s to run it", path)
	}
	return nil
}

// canonical resolves symlinks and cleans a path; a path that does not
// exist is only cleaned (it can match nothing real that way).
func canonical(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// within reports whether path is dir or below it, by whole components.
func within(path, dir string) bool {
	if path == dir {
		return true
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// insideOf returns a test of whether a path (after resolving symlinks) is
// root or below it. Root's own links are resolved once, here, however many
// paths are tested.
func insideOf(root string) func(path string) bool {
	real := canonical(root)
	return func(path string) bool { return within(canonical(path), real) }
}

// Append adds an entry to the allowlist file at path as a new [[entries]]
// table after the file's own text, so its comments and layout stay as the
// person wrote them. The file is locked while it is read and rewritten, and
// the result must parse, or nothing is written.
func Append(path string, e Entry) error {
	return privatefile.WithLock(path, func() error {
		_, data, err := LoadAllowlist(path)
		if err != nil {
			return err
		}
		entry, err := toml.Marshal(Allowlist{Entries: []Entry{e}})
		if err != nil {
			return fmt.Errorf("encode the entry: %w", err)
		}
		if len(data) > 0 {
			data = append(bytes.TrimRight(data, "\n"), "\n\n"...)
		}
		data = append(data, entry...)
		if _, err := ParseAllowlist(data); err != nil {
			return fmt.Errorf("the file with the new entry does not parse: %w", err)
		}
		return privatefile.Write(path, data)
	})
}
