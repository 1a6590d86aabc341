// Package extract answers questions about files exactly: frontmatter fields,
// regex matches, and the exports, imports, functions and types of Go,
// JavaScript/TypeScript, Python and Rust code, with line numbers. Many files
// are processed in parallel and results are cached in the store by content.
package extract

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"
	"golang.org/x/sys/unix"

	"lmtool.dev/lm/pkg/confine"
	"lmtool.dev/lm/pkg/helpercall"
	"lmtool.dev/lm/pkg/op"
)

// Tasks are the task types, in the order help lists them.
var Tasks = []string{"frontmatter", "pattern_match", "pattern", "exports", "imports", "functions", "types", "structure", "dependencies"}

// Input is a local_extract call.
type Input struct {
	TaskType         string   `json:"task_type,omitempty" jsonschema:"what to extract (default frontmatter)"`
	Type             string   `json:"type,omitempty" jsonschema:"short for task_type"`
	Files            []string `json:"files" jsonschema:"files, directories (walked, .gitignore respected) and globs (** for any depth), relative to root"`
	Patterns         []string `json:"patterns,omitempty" jsonschema:"pattern_match: regular expressions (RE2 syntax, multi-line mode)"`
	Fields           []string `json:"fields,omitempty" jsonschema:"frontmatter: the fields to return (default all); missing ones are null"`
	Extract          *Spec    `json:"extract,omitempty" jsonschema:"spec 001's nested form of patterns, fields and format"`
	Format           string   `json:"format,omitempty" jsonschema:"json (default) or list: each file's data as a list of strings (frontmatter: field: value; pattern_match: the matches; exports, imports, functions, types: the names)"`
	Depth            int      `json:"depth,omitempty" jsonschema:"dependencies: how many import levels to follow from the given files (default 1)"`
	Root             string   `json:"root,omitempty" jsonschema:"the directory paths resolve under (default: the current directory)"`
	AllowOutsideRoot bool     `json:"allow_outside_root,omitempty" jsonschema:"read paths outside root too"`
	NoCache          bool     `json:"no_cache,omitempty" jsonschema:"neither read nor write the content-hash cache"`
	MaxFileBytes     int64    `json:"max_file_bytes,omitempty" jsonschema:"skip larger files (default 10 MiB)"`
	MaxMatches       int      `json:"max_matches,omitempty" jsonschema:"pattern_match: stop after this many matches per file (default 1000)"`
	helpercall.Request

	patterns []pattern
}

// Spec is spec 001's nested extract object.
type Spec struct {
	Patterns []string `json:"patterns,omitempty"`
	Fields   []string `json:"fields,omitempty"`
	Format   string   `json:"format,omitempty" jsonschema:"json or list, as the top-level format"`
}

// RefineSchema lists the task types.
func (*Input) RefineSchema(s *jsonschema.Schema) {
	for _, f := range []string{"task_type", "type"} {
		s.Properties[f].Enum = []any{}
		for _, t := range Tasks {
			s.Properties[f].Enum = append(s.Properties[f].Enum, t)
		}
	}
	s.Properties["depth"].Minimum = jsonschema.Ptr(0.0)
	s.Properties["format"].Enum = []any{"json", "list"}
	s.Properties["extract"].Properties["format"].Enum = []any{"json", "list"}
}

// Validate merges the spec's nested form, applies defaults and compiles the
// patterns, so a bad pattern is rejected before any file is read.
func (in *Input) Validate() error {
	if err := in.CheckSchema(); err != nil {
		return err
	}
	if in.TaskType == "" {
		in.TaskType = in.Type
	}
	if in.TaskType == "" {
		in.TaskType = "frontmatter"
	}
	if in.TaskType == "pattern" {
		in.TaskType = "pattern_match"
	}
	if in.Extract != nil {
		in.Patterns = append(in.Patterns, in.Extract.Patterns...)
		in.Fields = append(in.Fields, in.Extract.Fields...)
		if in.Format == "" {
			in.Format = in.Extract.Format
		}
	}
	if in.Format == "list" && (in.TaskType == "structure" || in.TaskType == "dependencies") {
		return op.Errorf(op.KindInvalid, "format list gives one list per file; %s has several", in.TaskType).
			WithHint("use format json, or a task with one list: frontmatter, pattern_match, exports, imports, functions or types")
	}
	if len(in.Files) == 0 {
		return op.Errorf(op.KindInvalid, "no files given").WithHint("name files, directories or globs")
	}
	if in.Depth == 0 {
		in.Depth = 1
	}
	if in.MaxFileBytes == 0 {
		in.MaxFileBytes = DefaultMaxFileBytes
	}
	if in.MaxMatches == 0 {
		in.MaxMatches = 1000
	}
	if in.TaskType == "pattern_match" {
		if len(in.Patterns) == 0 {
			return op.Errorf(op.KindInvalid, "pattern_match needs at least one pattern").WithHint("pass --patterns REGEX")
		}
		for _, p := range in.Patterns {
			pat, err := compilePattern(p)
			if err != nil {
				return op.Errorf(op.KindInvalid, "pattern %q: %v", p, err).WithHint("patterns use Go's RE2 syntax")
			}
			in.patterns = append(in.patterns, pat)
		}
	}
	return nil
}

// FileResult is what one file yielded.
type FileResult struct {
	Found         bool           `json:"found"`
	Language      string         `json:"language,omitempty"`
	Format        string         `json:"format,omitempty" jsonschema:"frontmatter: yaml, toml or json"`
	Data          any            `json:"data,omitempty" jsonschema:"frontmatter: the fields, an object; with format list: the answer as a list of strings"`
	Lines         map[string]int `json:"lines,omitempty" jsonschema:"frontmatter: the line of each field"`
	LineNumbers   []int          `json:"line_numbers,omitempty"`
	Matches       []Match        `json:"matches,omitempty"`
	Truncated     bool           `json:"truncated,omitempty" jsonschema:"pattern_match: max_matches was reached"`
	*Symbols      `json:",omitempty"`
	Dependencies  *Dependencies `json:"dependencies,omitempty"`
	Error         string        `json:"error,omitempty" jsonschema:"why this file has no result"`
	ErrorCategory string        `json:"error_category,omitempty" jsonschema:"file_not_found, no_files, unreadable (a directory the walk could not read, or a FIFO, socket or device named as a file), path_too_long, unsupported_language, binary_file, too_large, invalid_frontmatter, parse_error, outside_root"`
	Cached        bool          `json:"cached,omitempty"`
}

func failed(category string, err error) FileResult {
	return FileResult{Error: err.Error(), ErrorCategory: category}
}

// Data is local_extract's answer.
type Data struct {
	TaskType string                `json:"task_type"`
	Results  map[string]FileResult `json:"results" jsonschema:"by file, as named in the call"`
	Stats    Stats                 `json:"stats"`
}

// Stats counts the files of a call.
type Stats struct {
	Files  int `json:"files"`
	Found  int `json:"found"`
	Cached int `json:"cached"`
	Failed int `json:"failed" jsonschema:"files with an error (the rest of the batch still succeeded)"`
}

// Output is local_extract's result.
type Output = helpercall.Result[Data]

// Extract answers a local_extract call.
func Extract(ctx context.Context, env *op.Env, in Input) (Output, error) {
	results, read, err := run(ctx, env, in)
	if err != nil {
		return Output{}, err
	}
	d := Data{TaskType: in.TaskType, Results: results}
	if in.Format == "list" {
		for name, r := range results {
			results[name] = r.asList(in.TaskType)
		}
	}
	for _, r := range results {
		d.Stats.Files++
		if r.Found {
			d.Stats.Found++
		}
		if r.Cached {
			d.Stats.Cached++
		}
		if r.Error != "" {
			d.Stats.Failed++
		}
	}
	if err := in.Conform(d); err != nil {
		return Output{}, err
	}
	return withMissing(helpercall.OK(d, read), results), nil
}

// withMissing makes a file that does not exist fail the command as rg's
// does (exit 3, the error on stderr) while the others' results still print.
func withMissing(out Output, results map[string]FileResult) Output {
	var missing []string // sorted alone: most calls have none, and sorting every name cost a big call dearly
	for name, r := range results {
		if r.ErrorCategory == "file_not_found" {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	for _, name := range missing {
		out = out.WithNote(results[name].Error).WithExit(op.KindNotFound.ExitCode())
	}
	return out
}

// run processes every file of the call.
func run(ctx context.Context, env *op.Env, in Input) (map[string]FileResult, int64, error) {
	root, err := confine.ForOutside(env, in.Root, in.AllowOutsideRoot)
	if err != nil {
		return nil, 0, err
	}
	defer root.Close()
	files, results, err := Expand(ctx, root, env.Environ, in.Files)
	if err != nil {
		return nil, 0, err
	}
	if in.TaskType == "dependencies" {
		read, err := dependencies(ctx, env, in, root, files, results)
		return results, read, err
	}
	// Sized once: grown step by step, a map of thousands of results is
	// copied a dozen times.
	all := make(map[string]FileResult, len(files)+len(results))
	maps.Copy(all, results)
	if in.TaskType == "pattern_match" {
		read, err := search(ctx, in, root, files, all)
		return all, read, err
	}
	got, read, err := process(ctx, env, in, root, files)
	if err != nil {
		return nil, read, err
	}
	for i, f := range files {
		all[f.Name] = got[i]
	}
	return all, read, nil
}

// search matches the patterns in files, reading them in parallel, each
// into its worker's buffer (matches copy what they keep), and puts each
// file's result in results as it comes. Matches are never cached: matching
// costs no more than hashing.
func search(ctx context.Context, in Input, root *confine.Root, files []File, results map[string]FileResult) (int64, error) {
	var mu sync.Mutex
	put := func(name string, r FileResult) {
		mu.Lock()
		results[name] = r
		mu.Unlock()
	}
	var read atomic.Int64
	// Each worker opens the files it takes through an opener of its own,
	// which resolves a directory's path once, not once per file.
	openers := make([]*confine.Opener, workers(len(files)))
	for w := range openers {
		openers[w] = root.Opener()
		defer openers[w].Close()
	}
	parallel(ctx, len(files), func(w, i int) {
		// Fresh buffers would cost page faults and GC.
		buf := readBuffers.Get().(*[]byte)
		defer readBuffers.Put(buf)
		content, res, ok := readOpened(root, openers[w].OpenFD, files[i].rel, in.MaxFileBytes, buf)
		if ok {
			read.Add(int64(len(content)))
			res = matchPatterns(content, in.patterns, in.MaxMatches)
		}
		put(files[i].Name, res)
	})
	return read.Load(), ctx.Err()
}

// job is one file in flight.
type job struct {
	file    File
	content []byte
	key     string
	result  FileResult
	done    bool
}

// process answers the task (any but pattern_match) for files: read and hash in parallel, look the
// hashes up in the cache in one transaction, compute the misses in
// parallel, and store them in one transaction.
func process(ctx context.Context, env *op.Env, in Input, root *confine.Root, files []File) ([]FileResult, int64, error) {
	jobs := make([]job, len(files))
	useCache := !in.NoCache && env.Store != nil
	taskKey := cacheTaskKey(in)
	code := in.TaskType != "frontmatter"
	var read int64
	var mu sync.Mutex
	parallel(ctx, len(files), func(_, i int) {
		j := &jobs[i]
		j.file = files[i]
		if code && LanguageOf(j.file.Path) == "" { // known without reading it
			j.result, j.done = failed("unsupported_language", errUnsupported(j.file.Path)), true
			return
		}
		content, res, ok := readFile(root, j.file.rel, in.MaxFileBytes, nil)
		if !ok {
			j.result, j.done = res, true
			return
		}
		mu.Lock()
		read += int64(len(content))
		mu.Unlock()
		j.content = content
		if useCache {
			// The language is part of the key: the same bytes scan
			// differently as Python and as TypeScript.
			sum := sha256.Sum256(append([]byte(taskKey+LanguageOf(j.file.Path)+"\x00"), content...))
			j.key = hex.EncodeToString(sum[:])
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if useCache {
		if err := lookup(ctx, env, jobs); err != nil {
			return nil, 0, err
		}
	}
	parallel(ctx, len(jobs), func(_, i int) {
		if j := &jobs[i]; !j.done {
			var followed bool
			j.result, followed = answer(in, root, j.file.Path, j.content)
			if followed {
				j.key = "" // the answer depends on other files: not cached by this one's content
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if useCache {
		if err := remember(ctx, env, jobs); err != nil {
			return nil, 0, err
		}
	}
	out := make([]FileResult, len(jobs))
	for i := range jobs {
		out[i] = jobs[i].result
	}
	return out, read, nil
}

// answer computes one file's result for the task, and whether it followed
// star re-exports into other files.
func answer(in Input, root *confine.Root, path string, content []byte) (FileResult, bool) {
	if in.TaskType == "frontmatter" {
		return frontmatterResult(content, in.Fields), false
	}
	lang := LanguageOf(path) // supported: process checked
	var syms *Symbols
	var followed bool
	var err error
	if in.TaskType == "exports" || in.TaskType == "structure" {
		syms, followed, err = ScanFile(root, path, content)
	} else {
		syms, err = Scan(lang, content)
	}
	if err != nil {
		r := failed("parse_error", err)
		r.Language = lang
		return r, false
	}
	return FileResult{Found: true, Language: lang, Symbols: syms.Only(in.TaskType)}, followed
}

// DefaultMaxFileBytes is the size past which a file is skipped as too large.
const DefaultMaxFileBytes = 10 << 20

// ReadText reads a text file of at most limit bytes beneath the root (name
// as [confine.Root.Resolve] returns it). A file that is missing, a
// directory, larger or binary is not read: the error says why and category
// is file_not_found, path_too_long, unreadable, too_large, binary_file or outside_root.
func ReadText(root *confine.Root, name string, limit int64) (content []byte, category string, err error) {
	content, res, ok := readFile(root, name, limit, nil)
	if !ok {
		return nil, res.ErrorCategory, errors.New(res.Error)
	}
	return content, "", nil
}

// readFile reads a file unless it is missing, a directory, too large or
// binary; then it returns the result saying why.
//
// With buf, the content is read into *buf (grown as needed) and is only
// valid until the buffer is reused.
//
// It makes the system calls itself: open (beneath the root, one openat2),
// fstat, read, close. os.Open adds four fcntl calls and an epoll_ctl per
// file, setting up a poller regular files cannot use: over a big tree, that
// was most of the system calls.
func readFile(root *confine.Root, name string, limit int64, buf *[]byte) ([]byte, FileResult, bool) {
	return readOpened(root, root.OpenFD, name, limit, buf)
}

// fileKind names in words a file type that is not a regular file.
func fileKind(kind uint32) string {
	switch kind {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	}
	return "not a file"
}

// readOpened is readFile opening the file with open (root's OpenFD, or an
// opener's).
func readOpened(root *confine.Root, open func(resolved string) (int, error), name string, limit int64, buf *[]byte) ([]byte, FileResult, bool) {
	notFound := func(op string, err error) ([]byte, FileResult, bool) {
		return nil, failed("file_not_found", &fs.PathError{Op: op, Path: root.Abs(name), Err: err}), false
	}
	fd, err := open(name)
	if confine.IsOutside(err) {
		return nil, failed("outside_root", err), false
	}
	if errors.Is(err, unix.ENAMETOOLONG) {
		// Listed by a walk that opens one directory at a time, but no
		// path can name it: the system's limit (PATH_MAX), not a missing file.
		return nil, failed("path_too_long", fmt.Errorf("%w: its path is longer than the system allows (PATH_MAX)", err)), false
	}
	if err != nil {
		return nil, failed("file_not_found", err), false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return notFound("stat", err)
	}
	if kind := st.Mode & unix.S_IFMT; kind != unix.S_IFREG && kind != unix.S_IFDIR {
		// A FIFO, socket or device: opened without waiting, it would read
		// as empty (or endless), which is not what the file holds.
		return nil, failed("unreadable", fmt.Errorf("%s is not a regular file (%s)", root.Abs(name), fileKind(kind))), false
	}
	if st.Size > limit {
		return nil, failed("too_large", fmt.Errorf("skipped: %d bytes is over the %d-byte limit", st.Size, limit)), false
	}
	var content []byte
	if buf == nil {
		content = make([]byte, st.Size)
	} else {
		if int64(cap(*buf)) < st.Size {
			*buf = make([]byte, st.Size)
		}
		content = (*buf)[:st.Size]
	}
	for n := 0; n < len(content); {
		m, err := retryEINTR(func() (int, error) { return unix.Read(fd, content[n:]) })
		if err == nil && m == 0 {
			err = io.ErrUnexpectedEOF // the file shrank since fstat
		}
		if err != nil {
			return notFound("read", err)
		}
		n += m
	}
	if bytes.IndexByte(content[:min(len(content), 8000)], 0) >= 0 {
		return nil, failed("binary_file", fmt.Errorf("skipped: binary file")), false
	}
	return content, FileResult{}, true
}

// retryEINTR calls fn again while a signal interrupts it.
func retryEINTR(fn func() (int, error)) (int, error) {
	for {
		n, err := fn()
		if err != unix.EINTR {
			return n, err
		}
	}
}

// readBuffers recycles file buffers across pattern matches.
var readBuffers = sync.Pool{New: func() any { return new([]byte) }}

// parallel runs fn(w, 0..n-1) on workers(n) workers, w being the number of
// the worker that runs it. Workers take the next index from a shared
// counter: handing each one over a channel cost a goroutine wake-up per
// file.
func parallel(ctx context.Context, n int, fn func(w, i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers(n) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n && ctx.Err() == nil; i = int(next.Add(1)) - 1 {
				fn(w, i)
			}
		})
	}
	wg.Wait()
}

// workers is how many workers parallel starts for n items: one per CPU.
func workers(n int) int { return min(runtime.GOMAXPROCS(0), n) }

// cacheVersion changes whenever a task's output for the same input would.
const cacheVersion = "extract/2"

func cacheTaskKey(in Input) string {
	opts, _ := json.Marshal(struct {
		V, Task string
		Fields  []string
	}{cacheVersion, in.TaskType, in.Fields})
	return string(opts) + "\x00"
}

// asList is the result in spec 001's list format: data is a list of
// strings, line_numbers their lines where each has one. The task's own
// list (matches, exports…) is replaced by it, so nothing is said twice.
func (r FileResult) asList(task string) FileResult {
	if !r.Found {
		return r
	}
	items := []string{}
	switch task {
	case "frontmatter":
		data, _ := r.Data.(map[string]any)
		names := slices.Collect(maps.Keys(data))
		slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(r.lineOf(a), r.lineOf(b)), cmp.Compare(a, b)) })
		for _, k := range names {
			v, isText := data[k].(string)
			if !isText {
				raw, _ := json.Marshal(data[k])
				v = string(raw)
			}
			items = append(items, k+": "+v)
		}
		r.Lines = nil
	case "pattern_match":
		for _, m := range r.Matches {
			items = append(items, m.Match)
		}
		r.Matches = nil
	default:
		items = r.Symbols.names(task)
		r.Symbols = nil
	}
	r.Data = items
	return r
}

// lineOf is a frontmatter field's line, missing fields last.
func (r FileResult) lineOf(field string) int {
	if l, ok := r.Lines[field]; ok {
		return l
	}
	return math.MaxInt
}
