package gitx

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/confine"
	"lmtool.dev/lm/pkg/helpercall"
	"lmtool.dev/lm/pkg/op"
)

// Input is a local_git call.
type Input struct {
	TaskType         string   `json:"task_type" jsonschema:"status, diff, log or changed_files"`
	Paths            []string `json:"paths,omitempty" jsonschema:"only these paths (relative to root)"`
	Limit            int      `json:"limit,omitempty" jsonschema:"log: the number of commits (default 20)"`
	Format           string   `json:"format,omitempty" jsonschema:"summary (default) or detailed: the branch and XY codes for status, the patch text for diff, author and body for log"`
	Since            string   `json:"since,omitempty" jsonschema:"diff and changed_files: compare with this revision instead of HEAD; log: only commits after it"`
	Staged           bool     `json:"staged,omitempty" jsonschema:"diff: only the staged changes"`
	MaxBytes         int      `json:"max_bytes,omitempty" jsonschema:"detailed diff: cut the patch text past this many bytes and set truncated (default 60000)"`
	IncludeLockFiles bool     `json:"include_lock_files,omitempty" jsonschema:"diff: keep lock files (package-lock.json, go.sum, …), which are left out by default"`
	Root             string   `json:"root,omitempty" jsonschema:"a directory inside the repository (default: the current directory)"`
	TrustRepoConfig  bool     `json:"trust_repo_config,omitempty" jsonschema:"run the programs the repository's settings name (core.fsmonitor, filters, textconv, diff.external), as plain git does; a person-only field"`
	Options          *Options `json:"options,omitempty" jsonschema:"spec 001's nested form of paths, limit and format"`
	helpercall.Request
}

// Options is spec 001's nested options object.
type Options struct {
	Paths  []string `json:"paths,omitempty"`
	Limit  int      `json:"limit,omitempty"`
	Format string   `json:"format,omitempty"`
}

// taskNames maps accepted spellings (the CLI's changed-files too) to tasks.
var taskNames = map[string]string{
	"status": "status", "diff": "diff", "log": "log",
	"changed_files": "changed_files", "changed-files": "changed_files",
}

// RefineSchema lists the accepted values.
func (*Input) RefineSchema(s *jsonschema.Schema) {
	s.Properties["task_type"].Enum = []any{"status", "diff", "log", "changed_files", "changed-files"}
	s.Properties["format"].Enum = []any{"summary", "detailed"}
	s.Properties["limit"].Minimum = jsonschema.Ptr(0.0)
	s.Properties["max_bytes"].Minimum = jsonschema.Ptr(0.0)
}

// Validate merges the nested options and fills in defaults.
func (in *Input) Validate() error {
	if err := in.CheckSchema(); err != nil {
		return err
	}
	in.TaskType = taskNames[in.TaskType]
	if o := in.Options; o != nil {
		in.Paths = append(in.Paths, o.Paths...)
		in.Limit = orInt(in.Limit, o.Limit)
		in.Format = orString(in.Format, o.Format)
		in.Options = nil
	}
	in.Limit = orInt(in.Limit, 20)
	in.Format = orString(in.Format, "summary")
	in.MaxBytes = orInt(in.MaxBytes, 60000)
	in.Root = orString(in.Root, ".")
	if in.Format != "summary" && in.Format != "detailed" {
		return op.Errorf(op.KindInvalid, "format %q: want summary or detailed", in.Format)
	}
	return nil
}

func orInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func orString(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Data is the answer; which fields are present depends on the task.
type Data struct {
	TaskType   string `json:"task_type"`
	Repository string `json:"repository" jsonschema:"the worktree's top directory"`

	// status
	Branch     *BranchInfo    `json:"branch,omitempty"`
	Staged     *[]string      `json:"staged,omitempty" jsonschema:"status: paths with staged changes"`
	Modified   *[]string      `json:"modified,omitempty" jsonschema:"status: paths with unstaged changes (deletions included)"`
	Untracked  *[]string      `json:"untracked,omitempty"`
	Conflicted *[]string      `json:"conflicted,omitempty"`
	Renamed    *[]Rename      `json:"renamed,omitempty" jsonschema:"status: renames and copies, staged or not"`
	Clean      *bool          `json:"clean,omitempty"`
	Entries    *[]StatusEntry `json:"entries,omitempty" jsonschema:"detailed status: every record"`

	// diff
	FilesChanged *int          `json:"files_changed,omitempty"`
	Insertions   *int          `json:"insertions,omitempty"`
	Deletions    *int          `json:"deletions,omitempty"`
	Changes      *[]FileChange `json:"changes,omitempty"`
	Excluded     *[]string     `json:"excluded,omitempty" jsonschema:"diff: lock files left out (include_lock_files keeps them)"`
	Patch        *string       `json:"patch,omitempty" jsonschema:"detailed diff: the unified diff"`
	Truncated    *bool         `json:"truncated,omitempty" jsonschema:"detailed diff: the patch was cut at max_bytes"`

	// log
	Commits *[]Commit `json:"commits,omitempty"`

	// changed_files
	Files *[]ChangedFile `json:"files,omitempty"`
}

// BranchInfo is the current branch.
type BranchInfo struct {
	Head     string `json:"head" jsonschema:"the branch name, empty when detached"`
	Commit   string `json:"commit" jsonschema:"empty in a repository without commits"`
	Detached bool   `json:"detached"`
	Upstream string `json:"upstream,omitempty"`
	Ahead    int    `json:"ahead"`
	Behind   int    `json:"behind"`
}

// Rename is a renamed or copied path.
type Rename struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Kind  string `json:"kind" jsonschema:"rename or copy"`
	Score int    `json:"score" jsonschema:"similarity in percent"`
}

// StatusEntry is one porcelain record in detailed status.
type StatusEntry struct {
	Path       string `json:"path"`
	OrigPath   string `json:"orig_path,omitempty"`
	PathBase64 string `json:"path_base64,omitempty" jsonschema:"the exact bytes of a path that is not valid UTF-8"`
	Type       string `json:"type" jsonschema:"changed, renamed, copied, unmerged, untracked or ignored"`
	Index      string `json:"index" jsonschema:"git's X code: the staged change, . for none"`
	Worktree   string `json:"worktree" jsonschema:"git's Y code: the unstaged change, . for none"`
	Submodule  bool   `json:"submodule,omitempty"`
}

// FileChange is one file's line counts in a diff.
type FileChange struct {
	File       string `json:"file"`
	PathBase64 string `json:"path_base64,omitempty" jsonschema:"the exact bytes of a file name that is not valid UTF-8"`
	From       string `json:"from,omitempty" jsonschema:"the old path of a rename or copy"`
	Added      int    `json:"added"`
	Removed    int    `json:"removed"`
	Binary     bool   `json:"binary,omitempty"`
}

// Commit is one log entry.
type Commit struct {
	Hash    string `json:"hash"`
	Short   string `json:"short"`
	Message string `json:"message" jsonschema:"the subject line"`
	Date    string `json:"date" jsonschema:"author date, RFC 3339"`
	Author  string `json:"author,omitempty"`
	Email   string `json:"email,omitempty"`
	Body    string `json:"body,omitempty"`
}

// ChangedFile is one path that changed.
type ChangedFile struct {
	Path       string `json:"path"`
	PathBase64 string `json:"path_base64,omitempty" jsonschema:"the exact bytes of a path that is not valid UTF-8"`
	Status     string `json:"status" jsonschema:"added, modified, deleted, renamed, copied, type_changed, unmerged or untracked"`
	From       string `json:"from,omitempty"`
}

// Output is local_git's result. It embeds the envelope, whose JSON it is,
// so that it can also declare its table for people (table.go).
type Output struct{ helpercall.Result[Data] }

// Git answers one local_git call.
func Git(ctx context.Context, env *op.Env, in Input) (Output, error) {
	root, err := confine.For(env, in.Root)
	if err != nil {
		return Output{}, err
	}
	defer root.Close()
	r, err := openRepo(ctx, env.Environ, root, !env.Caller.IsPerson(), in.TrustRepoConfig)
	if err != nil {
		return Output{}, err
	}
	specs, err := r.pathspecs(in.Paths)
	if err != nil {
		return Output{}, err
	}
	d := Data{TaskType: in.TaskType, Repository: r.top}
	var read int
	switch in.TaskType {
	case "status":
		read, err = r.status(ctx, in, specs, &d)
	case "diff":
		read, err = r.diff(ctx, in, specs, &d)
	case "log":
		read, err = r.log(ctx, in, specs, &d)
	case "changed_files":
		read, err = r.changedFiles(ctx, in, specs, &d)
	}
	if err != nil {
		return Output{}, err
	}
	if err := in.Conform(d); err != nil {
		return Output{}, err
	}
	return Output{helpercall.OK(d, int64(read))}, nil
}

func (r *repo) status(ctx context.Context, in Input, specs []string, d *Data) (int, error) {
	args := append(append([]string{"status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all"}, r.g.StatusOptions()...), "--")
	args = append(args, specs...)
	out, err := r.git(ctx, args...)
	if err != nil {
		return 0, err
	}
	p, err := ParsePorcelain(out)
	if err != nil {
		return 0, err
	}
	staged, modified, untracked, conflicted := []string{}, []string{}, []string{}, []string{}
	renamed := []Rename{}
	var entries []StatusEntry
	for _, e := range p.Entries {
		switch e.Kind {
		case '?':
			untracked = append(untracked, e.Path)
		case 'u':
			conflicted = append(conflicted, e.Path)
		case '!':
		default:
			if e.Index != '.' {
				staged = append(staged, e.Path)
			}
			if e.Worktree != '.' {
				modified = append(modified, e.Path)
			}
			if e.Kind == '2' {
				renamed = append(renamed, renameOf(e))
			}
		}
		if in.Format == "detailed" {
			entries = append(entries, entryOf(e))
		}
	}
	b := p.Branch
	d.Branch = &BranchInfo{Head: b.Head, Commit: b.OID, Upstream: b.Upstream, Ahead: b.Ahead, Behind: b.Behind}
	if b.Head == "(detached)" {
		d.Branch.Head, d.Branch.Detached = "", true
	}
	if b.OID == "(initial)" {
		d.Branch.Commit = ""
	}
	for _, l := range [][]string{staged, modified, untracked, conflicted} {
		slices.Sort(l) // tracked entries come in an undefined order
	}
	clean := len(p.Entries) == 0
	d.Staged, d.Modified, d.Untracked, d.Conflicted, d.Renamed, d.Clean = &staged, &modified, &untracked, &conflicted, &renamed, &clean
	if in.Format == "detailed" {
		if entries == nil {
			entries = []StatusEntry{}
		}
		d.Entries = &entries
	}
	return len(out), nil
}

func renameOf(e Entry) Rename {
	kind := "rename"
	if strings.HasPrefix(e.Score, "C") {
		kind = "copy"
	}
	score, _ := strconv.Atoi(e.Score[1:])
	return Rename{From: e.OrigPath, To: e.Path, Kind: kind, Score: score}
}

func entryOf(e Entry) StatusEntry {
	se := StatusEntry{Path: e.Path, OrigPath: e.OrigPath, Index: string(e.Index), Worktree: string(e.Worktree),
		Submodule: strings.HasPrefix(e.Submodule, "S")}
	se.PathBase64 = exactBytes(e.Path)
	switch e.Kind {
	case '1':
		se.Type = "changed"
	case '2':
		se.Type = renameOf(e).Kind + "d"
	case 'u':
		se.Type = "unmerged"
	case '?':
		se.Type = "untracked"
	case '!':
		se.Type = "ignored"
	}
	return se
}

// exactBytes is the base64 of a path JSON cannot carry as it is (one that
// is not valid UTF-8 turns into U+FFFD there), else "".
func exactBytes(path string) string {
	if utf8.ValidString(path) {
		return ""
	}
	return base64Of(path)
}

func base64Of(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// base revision for diff and changed_files: --since, else HEAD, else (in an
// empty repository) the empty tree.
func (r *repo) base(ctx context.Context, since string) (string, error) {
	if since != "" {
		return r.revision(ctx, since)
	}
	if r.hasHead(ctx) {
		return "HEAD", nil
	}
	return r.emptyTree(ctx)
}

// lockFiles are left out of diffs by default: machine-written, long, and of
// no use to a reader.
var lockFiles = []string{
	"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb", "bun.lock",
	"go.sum", "Cargo.lock", "Gemfile.lock", "composer.lock", "poetry.lock", "Pipfile.lock", "uv.lock",
	"pdm.lock", "mix.lock", "pubspec.lock", "Podfile.lock", "flake.lock", "packages.lock.json",
}

func (r *repo) diff(ctx context.Context, in Input, specs []string, d *Data) (int, error) {
	base, err := r.base(ctx, in.Since)
	if err != nil {
		return 0, err
	}
	args := append([]string{"diff", "--no-color", "-C"}, r.g.DiffOptions()...)
	if in.Staged {
		args = append(args, "--cached")
	}
	args = append(args, base)
	out, err := r.git(ctx, append(append(slices.Clone(args), "--numstat", "-z", "--"), specs...)...)
	if err != nil {
		return 0, err
	}
	all, err := ParseNumstat(out)
	if err != nil {
		return 0, err
	}
	changes, excluded := []FileChange{}, []string{}
	var ins, del int
	for _, c := range all {
		c.PathBase64 = exactBytes(c.File)
		if !in.IncludeLockFiles && slices.Contains(lockFiles, path.Base(c.File)) {
			excluded = append(excluded, c.File)
			continue
		}
		changes = append(changes, c)
		ins += c.Added
		del += c.Removed
	}
	n := len(changes)
	d.FilesChanged, d.Insertions, d.Deletions, d.Changes, d.Excluded = &n, &ins, &del, &changes, &excluded
	read := len(out)
	if in.Format == "detailed" {
		pspecs := slices.Clone(specs)
		if len(pspecs) == 0 {
			pspecs = []string{":(top)"}
		}
		for _, f := range excluded {
			pspecs = append(pspecs, ":(top,literal,exclude)"+f)
		}
		patch, err := r.git(ctx, append(append(args, "--patch", "--"), pspecs...)...)
		if err != nil {
			return 0, err
		}
		read += len(patch)
		text, cut := cutUTF8(patch, in.MaxBytes)
		d.Patch, d.Truncated = &text, &cut
	}
	return read, nil
}

// cutUTF8 returns at most max bytes of b, cut at a line end when one is
// near, never inside a UTF-8 sequence.
func cutUTF8(b []byte, max int) (string, bool) {
	if len(b) <= max {
		return string(b), false
	}
	b = b[:max]
	if nl := bytes.LastIndexByte(b, '\n'); nl > max/2 {
		b = b[:nl+1]
	}
	// Drop a multi-byte sequence the cut left incomplete.
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				b = b[:i]
			}
			break
		}
	}
	return string(b), true
}

// ParseNumstat parses `git diff --numstat -z`: "A\tR\tpath\0", or for a
// rename "A\tR\t\0from\0to\0"; binary files have "-" counts.
func ParseNumstat(data []byte) ([]FileChange, error) {
	var changes []FileChange
	for len(data) > 0 {
		end := bytes.IndexByte(data, 0)
		if end < 0 {
			return nil, fmt.Errorf("numstat: record without its NUL terminator")
		}
		fields := strings.SplitN(string(data[:end]), "\t", 3)
		data = data[end+1:]
		if len(fields) != 3 {
			return nil, fmt.Errorf("numstat: malformed record %q", truncate([]byte(fields[0])))
		}
		c := FileChange{File: fields[2]}
		if fields[0] == "-" && fields[1] == "-" {
			c.Binary = true
		} else {
			a, err1 := strconv.ParseUint(fields[0], 10, 31)
			rm, err2 := strconv.ParseUint(fields[1], 10, 31)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("numstat: bad counts %q %q", fields[0], fields[1])
			}
			c.Added, c.Removed = int(a), int(rm)
		}
		if c.File == "" { // rename: two more NUL-terminated paths
			paths := bytes.SplitN(data, []byte{0}, 3)
			if len(paths) < 3 {
				return nil, fmt.Errorf("numstat: rename without both paths")
			}
			c.From, c.File = string(paths[0]), string(paths[1])
			data = paths[2]
		}
		changes = append(changes, c)
	}
	return changes, nil
}

func (r *repo) log(ctx context.Context, in Input, specs []string, d *Data) (int, error) {
	commits := []Commit{}
	d.Commits = &commits
	if !r.hasHead(ctx) {
		return 0, nil // an empty repository has no history
	}
	args := []string{"log", "-z", "--no-color", "--format=%H%x00%h%x00%aI%x00%an%x00%ae%x00%s%x00%b", "-n", strconv.Itoa(in.Limit)}
	if in.Since != "" {
		rev, err := r.revision(ctx, in.Since)
		if err != nil {
			return 0, err
		}
		args = append(args, rev+"..HEAD")
	}
	out, err := r.git(ctx, append(append(args, "--"), specs...)...)
	if err != nil {
		return 0, err
	}
	const nfields = 7
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(out) == 0 {
		fields = nil
	}
	if len(fields)%nfields != 0 {
		return 0, fmt.Errorf("git log: unexpected output (%d fields)", len(fields))
	}
	for i := 0; i < len(fields); i += nfields {
		f := fields[i : i+nfields]
		c := Commit{Hash: strings.TrimPrefix(f[0], "\n"), Short: f[1], Date: f[2], Message: f[5]}
		if in.Format == "detailed" {
			c.Author, c.Email, c.Body = f[3], f[4], strings.TrimRight(f[6], "\n")
		}
		commits = append(commits, c)
	}
	return len(out), nil
}

// nameStatus maps git's --name-status letters to words.
var nameStatus = map[byte]string{
	'A': "added", 'M': "modified", 'D': "deleted", 'R': "renamed", 'C': "copied", 'T': "type_changed", 'U': "unmerged",
}

func (r *repo) changedFiles(ctx context.Context, in Input, specs []string, d *Data) (int, error) {
	base, err := r.base(ctx, in.Since)
	if err != nil {
		return 0, err
	}
	out, err := r.git(ctx, append(append(append([]string{"diff"}, r.g.DiffOptions()...), "-C", "--name-status", "-z", base, "--"), specs...)...)
	if err != nil {
		return 0, err
	}
	files := []ChangedFile{}
	fields := bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0})
	for i := 0; i < len(fields) && len(out) > 0; {
		code := string(fields[i])
		status, ok := nameStatus[code[0]]
		if code == "" || !ok {
			return 0, fmt.Errorf("git diff --name-status: unknown status %q", code)
		}
		f := ChangedFile{Status: status}
		if code[0] == 'R' || code[0] == 'C' {
			if i+2 >= len(fields) {
				return 0, fmt.Errorf("git diff --name-status: %s without both paths", code)
			}
			f.From, f.Path = string(fields[i+1]), string(fields[i+2])
			i += 3
		} else {
			if i+1 >= len(fields) {
				return 0, fmt.Errorf("git diff --name-status: %s without a path", code)
			}
			f.Path = string(fields[i+1])
			i += 2
		}
		f.PathBase64 = exactBytes(f.Path)
		files = append(files, f)
	}
	untracked, err := r.git(ctx, append([]string{"ls-files", "-z", "--others", "--exclude-standard", "--full-name", "--"}, specs...)...)
	if err != nil {
		return 0, err
	}
	for _, p := range bytes.Split(untracked, []byte{0}) {
		if len(p) > 0 {
			files = append(files, ChangedFile{Path: string(p), PathBase64: exactBytes(string(p)), Status: "untracked"})
		}
	}
	d.Files = &files
	return len(out) + len(untracked), nil
}
