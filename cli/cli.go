// Package cli is lm's command tree. It turns every registered operation into
// a urfave/cli command and adds the few commands that are not operations
// (version, mcp, completion). It holds no domain logic.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v3"

	"lmtool.dev/lm/pkg/config"
	"lmtool.dev/lm/pkg/jsonio"
	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/queue"
	"lmtool.dev/lm/pkg/queue/pgstore"
	"lmtool.dev/lm/pkg/servers"
	"lmtool.dev/lm/pkg/store"
	"lmtool.dev/lm/pkg/table"
)

// Streams are the standard streams a run reads and writes.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// Main runs lm on the process's arguments and streams and returns the exit
// status.
// The first SIGINT or SIGTERM cancels the run, which ends what it can
// cleanly (a gateway stops its children); a second one ends the process at
// once, as the signal's default does, should the run be stuck where no
// cancellation reaches (a read the kernel will not interrupt).
func Main(catalog op.Catalog) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	return Run(ctx, catalog, os.Args, Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
}

// Run runs lm with args (args[0] is the program name) and returns the exit
// status. Invoked as lm-GROUP (a link to lm), it runs `lm GROUP …`.
func Run(ctx context.Context, catalog op.Catalog, args []string, s Streams) int {
	a := &app{catalog: catalog, streams: s, started: time.Now()}
	root := a.root()
	args = rewriteArgs(root, multiCall(args, root))
	a.args = args
	a.prepare(args[1:])
	err := root.Run(ctx, args)
	return a.exit(ctx, root, err)
}

// multiCall rewrites `lm-queue add` to `lm queue add`.
func multiCall(args []string, root *ucli.Command) []string {
	if len(args) == 0 {
		return []string{"lm"}
	}
	base := strings.TrimSuffix(filepath.Base(args[0]), ".exe")
	group, ok := strings.CutPrefix(base, "lm-")
	if !ok || root.Command(group) == nil {
		return args
	}
	return append([]string{"lm", group}, args[1:]...)
}

// app is one run: its streams and the state its commands share.
type app struct {
	catalog op.Catalog
	streams Streams
	started time.Time
	ops     []op.Operation
	leaves  []leaf
	args    []string // the command line, for the words after "--"
}

// exitStatus ends a run with a status and no message, for results that
// choose their own exit code.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// exit prints err (as a line of text, or as JSON with --json-errors) and
// returns the exit status for it.
func (a *app) exit(ctx context.Context, root *ucli.Command, err error) int {
	if err == nil {
		return 0
	}
	var status exitStatus
	if errors.As(err, &status) {
		return int(status)
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return op.ExitInterrupted
	}
	cmdName := ""
	var usage *usageError
	if errors.As(err, &usage) {
		hint := usage.hint
		if hint == "" {
			hint = fmt.Sprintf("see '%s --help'", usage.cmd)
		}
		err = &op.Error{Kind: op.KindInvalid, Category: "usage", Err: err, Hint: hint}
		cmdName = strings.TrimPrefix(usage.cmd, "lm ")
	}
	if errors.Is(err, jsonio.ErrBadFilter) {
		err = &op.Error{Kind: op.KindInvalid, Category: "usage", Err: err}
	}
	var cmdErr *commandError
	if errors.As(err, &cmdErr) {
		cmdName = cmdErr.cmd
	}
	env := op.EnvelopeOf(err)
	if jsonErrors(root) {
		data, _ := jsonio.Marshal(env)
		fmt.Fprintf(a.streams.Err, "%s\n", data)
		return env.ExitCode
	}
	prefix := "lm: "
	if cmdName != "" && cmdName != "lm" {
		prefix += cmdName + ": "
	}
	// A message may quote what a server, a file or a repository said:
	// what a terminal would run in it is shown instead.
	fmt.Fprintf(a.streams.Err, "%s%s\n", prefix, table.Printable(env.Error))
	if env.Suggestion != "" {
		fmt.Fprintf(a.streams.Err, "lm: hint: %s\n", table.Printable(env.Suggestion))
	}
	return env.ExitCode
}

// commandError records which command failed, for the message prefix.
type commandError struct {
	cmd string
	err error
}

func (e *commandError) Error() string { return e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }

func jsonErrors(root *ucli.Command) bool {
	if root.Bool("json-errors") {
		return true
	}
	v := os.Getenv("LM_JSON_ERRORS")
	return v != "" && v != "0" && v != "false"
}

// env builds the operation environment from the global flags. Nothing is
// opened here: the store opens per transaction.
func (a *app) env(cmd *ucli.Command) (*op.Env, error) {
	st := store.Unusable(op.Errorf(op.KindInvalid, "cannot locate lm's store").
		WithHint("set LM_HOME, XDG_DATA_HOME or HOME, or pass --store"))
	queueURL, getenv, err := queueDatabase(cmd.String("store"), os.Getenv)
	if err != nil {
		return nil, err
	}
	var queueErr error
	if home, err := store.Home(os.Getenv); err == nil && cmd.String("store") == "" && os.Getenv("LM_STORE") == "" {
		queueURL, queueErr = configuredQueue(home)
	}
	path, err := store.Locate(cmd.String("store"), getenv)
	if queueURL != "" {
		// The queue is in the database; what is local stays in lm.db.
		path, err = store.Locate("", getenv)
	}
	if err == nil {
		st = store.New(path, cmd.Duration("lock-timeout"))
	}
	home, err := store.Home(os.Getenv)
	switch {
	case err == nil:
	case path != "":
		home = filepath.Dir(path)
	default:
		// Nowhere to keep files: nothing is configured (allowlists deny,
		// settings default) and nothing can be written, rather than
		// reading lm's files from whatever directory this runs in.
		home = "/nonexistent/lm-home"
	}
	return &op.Env{
		Store:    st,
		Queue:    queueURL,
		QueueErr: queueErr,
		Home:     home,
		Stdin:    a.streams.In,
		Stdout:   a.streams.Out,
		Environ:  os.Environ(),
		Stderr:   a.streams.Err,
		Verbose:  cmd.Bool("verbose") || jsonio.IsTerminal(a.streams.Err),
		Now:      time.Now,
		Started:  a.started,
		Caller:   op.Person(),
	}, nil
}

func (a *app) printer(cmd *ucli.Command) (*jsonio.Printer, error) {
	jq, raw := cmd.String("jq"), cmd.Bool("raw-output")
	switch {
	case strings.HasPrefix(jq, "-"):
		return nil, &usageError{cmd: cmd.FullName(), err: fmt.Errorf("--jq wants a jq filter, got the flag %q", jq),
			hint: "the filter follows --jq: write -r --jq EXPR (or --jq EXPR -r)"}
	case raw && jq == "":
		return nil, &usageError{cmd: cmd.FullName(), err: errors.New("-r prints the strings a --jq filter selects, and there is no --jq"),
			hint: "add a filter, e.g. -r --jq '.items[].id'"}
	}
	return jsonio.NewPrinter(a.streams.Out, cmd.String("jq"), cmd.Bool("raw-output"), jsonio.IsTerminal(a.streams.Out))
}

// queueDatabase tells a database URL in --store or LM_STORE from a file
// path: the queue then lives in the database, and getenv hides LM_STORE so
// the local store is found at its default place. A password in --store is
// refused: every process on the machine can read a command line.
func queueDatabase(flag string, getenv func(string) string) (string, func(string) string, error) {
	where := flag
	if where == "" {
		where = getenv("LM_STORE")
	}
	if !queue.IsURL(where) {
		return "", getenv, nil
	}
	if flag != "" && pgstore.HasPassword(flag) {
		return "", nil, op.Errorf(op.KindInvalid, "--store %s carries a password, which every process on this machine can read in the command line", pgstore.Redact(flag)).
			WithHint("leave it out of the URL and set PGPASSWORD (or use ~/.pgpass or LM_STORE)")
	}
	return where, func(k string) string {
		if k == "LM_STORE" {
			return ""
		}
		return getenv(k)
	}, nil
}

// storeTable is config.toml's [store]: the database a team's queue lives
// in, when neither --store nor LM_STORE says otherwise.
type storeTable struct {
	URL string `toml:"url"`
	// Password is a reference to lm's secrets (${secret:NAME}), never the
	// password itself; without it PGPASSWORD or ~/.pgpass supply one.
	Password string `toml:"password"`
}

// configuredQueue reads [store] from home's config.toml.
func configuredQueue(home string) (string, error) {
	// Read by every command, before it knows whether it uses the queue:
	// mistakes here fail the queue's operations only (op.Env.QueueErr).
	var t storeTable
	if err := config.Table(home, "store", &t); err != nil {
		return "", op.Errorf(op.KindInvalid, "%v", err)
	}
	if t.URL == "" {
		return "", nil
	}
	path := config.Path(home)
	if !queue.IsURL(t.URL) {
		return "", op.Errorf(op.KindInvalid, "%s: [store] url is not a database URL", path).
			WithHint("write url = \"postgres://USER@HOST/DATABASE?sslmode=verify-full\"")
	}
	if pgstore.HasPassword(t.URL) {
		return "", op.Errorf(op.KindInvalid, "%s: [store] url %s carries a password in a plain file", path, pgstore.Redact(t.URL)).
			WithHint("leave it out of the URL: lm servers secret set NAME, then password = \"${secret:NAME}\"; or set PGPASSWORD")
	}
	if t.Password == "" {
		return t.URL, nil
	}
	name, ok := strings.CutPrefix(t.Password, "${secret:")
	name, closed := strings.CutSuffix(name, "}")
	if !ok || !closed || name == "" {
		return "", op.Errorf(op.KindInvalid, "%s: [store] password must be a reference to a secret, ${secret:NAME}, not the password itself", path).
			WithHint("lm servers secret set NAME stores it, readable by you only")
	}
	password, err := servers.NewSecrets(home).Lookup(context.Background(), name)
	if err != nil {
		return "", op.Errorf(op.KindInvalid, "%s: [store] password: %v", path, err).
			WithHint("lm servers secret set %s (--file to keep it in LM_HOME)", name)
	}
	return pgstore.WithPassword(t.URL, password)
}
