package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"time"

	ucli "github.com/urfave/cli/v3"

	"lmtool.dev/lm/pkg/buildinfo"
	"lmtool.dev/lm/pkg/gateway"
	"lmtool.dev/lm/pkg/gateway/token"
	"lmtool.dev/lm/pkg/gatewayd"
	"lmtool.dev/lm/pkg/jsonio"
	"lmtool.dev/lm/pkg/mcpx"
	"lmtool.dev/lm/pkg/op"
)

// gatewayCommand is `lm gateway`: serve in the foreground. The background
// gateway's start, stop, restart, status and logs are operations (package
// gatewayd) that the registry hangs below it; the agents' tokens are here.
func (a *app) gatewayCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "gateway",
		Usage: "Serve the web page, the queue's HTTP API and MCP over HTTP",
		Description: "Without a subcommand it serves in the foreground until interrupted and prints the page's URL, which carries " +
			"the person's token (open it once; the page keeps the token). " +
			"The page is at /, the API at /api (described at /docs and /openapi.json), live events at /api/events, " +
			"MCP at /mcp (streamable HTTP) and /mcp/sse (legacy HTTP+SSE).\n\n" +
			"It listens on " + gateway.DefaultAddr + " by default and rejects requests from other origins and to other host names; " +
			"--allow-origin names origins whose pages may call it from a browser (CORS), trading their token for a single-use ticket " +
			"(POST /api/tickets) to open an EventSource on /sse or /api/events with ?ticket=. " +
			"Every request but the page's files needs \"Authorization: Bearer TOKEN\": the person's token ($LM_HOME/gateway.token, " +
			"made on the first start; or LM_API_TOKEN, or --token-file), or an agent's ('lm gateway token add NAME'), which names the " +
			"agent. --no-token is for loopback only.\n\n" +
			"Agents, with an agent token or none, are offered the agent profile; --allow widens it (see docs/callers.md).\n\n" +
			"Agents: {\"mcpServers\": {\"lm\": {\"type\": \"http\", \"url\": \"http://" + gateway.DefaultAddr + "/mcp\", " +
			"\"headers\": {\"Authorization\": \"Bearer AGENT_TOKEN\"}}}}",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "addr", Value: gateway.DefaultAddr, Usage: "listen on `HOST:PORT` (port 0 picks a free one)", Sources: ucli.EnvVars("LM_GATEWAY_ADDR"), Local: true},
			&ucli.StringFlag{Name: "token-file", Usage: "the person's bearer token is the one in `FILE` (default: $LM_API_TOKEN, else $LM_HOME/gateway.token, made on the first start)", TakesFile: true, Local: true},
			&ucli.BoolFlag{Name: "no-token", Usage: "serve without tokens (loopback only): the page's callers are the person, MCP's anonymous agents", Local: true},
			&ucli.BoolFlag{Name: "stateful", Usage: "keep MCP sessions (Mcp-Session-Id); the default is stateless so agents survive a restart", Local: true},
			rootFlag(),
			&durationFlag{Name: "session-ttl", Value: mcpx.DefaultSessionIdleTTL, Usage: "with --stateful, end a session idle this long (its client gets 404 and initializes again)", Local: true},
			&ucli.IntFlag{Name: "max-sessions", Value: mcpx.DefaultMaxSessions, Usage: "with --stateful, keep at most this many sessions per endpoint, ending the oldest", Local: true},
			&ucli.BoolFlag{Name: "log-file", Usage: "write the log to $LM_HOME/gateway.log, rotated by size ('lm gateway start' passes it)", Hidden: true, Local: true},
			&ucli.StringFlag{Name: "addr-file", Usage: "write the listening address to `FILE` once serving", TakesFile: true, Local: true},
			&ucli.StringFlag{Name: "log-level", Value: "info", Usage: "log records of `LEVEL` and above: debug, info, warn or error", Sources: ucli.EnvVars("LM_LOG_LEVEL"), Local: true},
			allowFlag(),
			&ucli.StringSliceFlag{Name: "allow-origin", Local: true,
				Usage: "let pages of `ORIGIN` (scheme://host[:port], repeatable) call the gateway from a browser, with CORS; " +
					"they still need a token, and an EventSource a ticket from POST /api/tickets (also [gateway] allow_origins)"},
		},
		Action:   a.gatewayServe,
		Commands: []*ucli.Command{a.gatewayTokenCommand()},
	}
}

func (a *app) gatewayFiles(cmd *ucli.Command) (gatewayd.Files, error) {
	env, err := a.env(cmd)
	if err != nil {
		return gatewayd.Files{}, err
	}
	return gatewayd.Files{Dir: env.Home}, nil
}

// gatewayServe is `lm gateway`: serve in the foreground until interrupted.
func (a *app) gatewayServe(ctx context.Context, cmd *ucli.Command) error {
	fail := func(err error) error { return &commandError{cmd: "gateway", err: err} }
	if cmd.Args().Present() {
		return unknownCommand(cmd)
	}
	env, err := a.env(cmd)
	if err != nil {
		return fail(err)
	}
	collectLessOften()
	// The gateway's callers are whoever reaches its port: they start as
	// anonymous, and each request is credited with what its token proves.
	// Its stdin and stdout are nobody's to use.
	env.Caller = op.Caller{}
	env.Stdin, env.Stdout = nil, nil
	if env.Grant, err = op.ParseGrant(cmd.StringSlice("allow"), a.ops); err != nil {
		return fail(err)
	}
	if env.Roots, err = agentRoots(cmd); err != nil {
		return fail(err)
	}
	tok, noToken, err := gatewayd.Auth(env, cmd.String("addr"), cmd.String("token-file"), cmd.Bool("no-token"))
	if err != nil {
		return fail(err)
	}
	logTo := a.streams.Err
	if cmd.Bool("log-file") {
		// Started by 'lm gateway start': the log is its file, rotated by
		// size so a gateway that runs for weeks does not fill the disk.
		files, err := a.gatewayFiles(cmd)
		if err != nil {
			return fail(err)
		}
		l, err := files.OpenLog(env.Home)
		if err != nil {
			return fail(err)
		}
		defer l.Close()
		logTo = l
	}
	level, err := gatewayd.LogLevel(cmd.String("log-level"))
	if err != nil {
		return fail(err)
	}
	logOpts := &slog.HandlerOptions{Level: level}
	var handler slog.Handler = slog.NewJSONHandler(logTo, logOpts)
	if jsonio.IsTerminal(logTo) {
		handler = slog.NewTextHandler(logTo, logOpts)
	}
	log := slog.New(handler)
	origins, err := gatewayd.AllowedOrigins(env.Home, cmd.StringSlice("allow-origin"))
	if err != nil {
		return fail(err)
	}
	srv, err := gateway.New(gateway.Options{Env: *env, Ops: a.ops, Resources: a.catalog.Resources, Version: buildinfo.Version(), Token: tok, NoToken: noToken, Log: log, AllowOrigins: origins,
		Sessions: mcpx.Sessions{Stateful: cmd.Bool("stateful"), IdleTTL: cmd.Duration("session-ttl"), Max: int(cmd.Int("max-sessions"))}})
	if err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", cmd.String("addr"))
	if err != nil {
		return fail(op.Errorf(op.KindUnavailable, "listen on %s: %w", cmd.String("addr"), err).
			WithHint("is another gateway running? see 'lm gateway status', or pass --addr HOST:PORT"))
	}
	addr := ln.Addr().String()
	base := "http://" + gatewayd.Reachable(addr)
	state := gatewayd.State{Pid: os.Getpid(), Addr: addr, URL: base + "/", Store: env.Store.Path, StartedAt: env.Started.UTC()}
	p, err := a.printer(cmd)
	if err != nil {
		ln.Close()
		return err
	}
	// The printed URL, the state and pid files and the address file come
	// once everything serves (HTTP and the control socket), so whoever
	// waits on them (`lm gateway start`, a script) can go on; a gateway
	// that fails to serve never replaces a running one's files.
	remove := func() {}
	defer func() { remove() }()
	ready := func() error {
		// The URL first: a background gateway's output is its log, which
		// is complete once `lm gateway start` sees the state file. The
		// page's URL carries the person's token, so it is printed here
		// only, never written to the state file (the log is private).
		// A person at a terminal gets it as a line to click first.
		if jsonio.IsTerminal(a.streams.Err) {
			fmt.Fprintf(a.streams.Err, "lm: the page: %s (the link carries its token)\n"+
				"lm: agents: %s/mcp with a token from 'lm gateway token add NAME'; Ctrl+C stops the gateway\n", srv.PageURL(gatewayd.Reachable(addr)), base)
		}
		if err := p.Document(ctx, map[string]any{"url": srv.PageURL(gatewayd.Reachable(addr)), "mcp_url": base + "/mcp", "addr": addr, "pid": state.Pid, "store": state.Store}); err != nil {
			return err
		}
		var err error
		if remove, err = (gatewayd.Files{Dir: env.Home}).Record(state); err != nil {
			remove = func() {}
			return err
		}
		if f := cmd.String("addr-file"); f != "" {
			if err := os.WriteFile(f, []byte(addr+"\n"), 0o600); err != nil {
				return fmt.Errorf("write address file: %w", err)
			}
		}
		return nil
	}
	if err := srv.Serve(ctx, ln, ready); err != nil {
		return fail(err)
	}
	return nil
}

// gatewayTokenCommand is `lm gateway token`: the agents' tokens. They are
// the person's to make, on the command line only: an agent never mints its
// own identity.
func (a *app) gatewayTokenCommand() *ucli.Command {
	home := func(cmd *ucli.Command) (string, error) {
		env, err := a.env(cmd)
		if err != nil {
			return "", err
		}
		return env.Home, nil
	}
	show := func(ctx context.Context, cmd *ucli.Command, v any) error {
		p, err := a.printer(cmd)
		if err != nil {
			return err
		}
		return p.Document(ctx, v)
	}
	name := func(cmd *ucli.Command, usage string) (string, error) {
		if cmd.Args().Len() != 1 {
			return "", &usageError{cmd: "lm gateway token " + cmd.Name, err: fmt.Errorf("give exactly one agent name: %s", usage)}
		}
		return cmd.Args().First(), nil
	}
	return &ucli.Command{
		Name:  "token",
		Usage: "Make, list and revoke the agents' tokens for the gateway",
		Description: "An agent token names its agent (queue status and the page show the name; get_user_request is attributed " +
			"to it) and gets the agent profile, never the person's powers. It is shown once, when made; lm keeps only its digest. " +
			"A running gateway accepts a new token, and refuses a removed one, from the next request.",
		Commands: []*ucli.Command{
			{
				Name: "add", Usage: "Make a token for the agent NAME and print it (once)", ArgsUsage: "NAME",
				Action: func(ctx context.Context, cmd *ucli.Command) error {
					n, err := name(cmd, "lm gateway token add NAME")
					if err != nil {
						return err
					}
					h, err := home(cmd)
					if err != nil {
						return err
					}
					tok, err := token.AddAgent(h, n, time.Now())
					if err != nil {
						return &commandError{cmd: "gateway token add", err: err}
					}
					return show(ctx, cmd, map[string]any{"name": n, "token": tok, "header": "Authorization: Bearer " + tok})
				},
			},
			{
				Name: "list", Usage: "List the agents that have a token (names and dates; tokens are never shown again)",
				Action: func(ctx context.Context, cmd *ucli.Command) error {
					if cmd.Args().Present() {
						return unknownCommand(cmd)
					}
					h, err := home(cmd)
					if err != nil {
						return err
					}
					agents, err := token.Agents(h)
					if err != nil {
						return &commandError{cmd: "gateway token list", err: err}
					}
					items := make([]map[string]any, 0, len(agents))
					for _, ag := range agents {
						items = append(items, map[string]any{"name": ag.Name, "created_at": ag.CreatedAt})
					}
					return show(ctx, cmd, map[string]any{"items": items})
				},
			},
			{
				Name: "rm", Usage: "Revoke the agent NAME's token", ArgsUsage: "NAME",
				Action: func(ctx context.Context, cmd *ucli.Command) error {
					n, err := name(cmd, "lm gateway token rm NAME")
					if err != nil {
						return err
					}
					h, err := home(cmd)
					if err != nil {
						return err
					}
					if err := token.RemoveAgent(h, n); err != nil {
						return &commandError{cmd: "gateway token rm", err: err}
					}
					return show(ctx, cmd, map[string]any{"removed": true, "name": n})
				},
			},
		},
	}
}

// collectLessOften has the gateway collect garbage less often than Go's
// default, under a soft memory limit, unless the person set GOGC or
// GOMEMLIMIT. Under load every MCP call and commit allocates, and the
// collector took a tenth of the gateway's CPU and stretched the wait of
// deliveries behind it: 50 agents looping get_user_request while 10,000
// instructions were added had add → delivery p99 282–454 ms with Go's
// default and 149–245 ms at 400 % (alternating runs); the peak resident set
// went from 55 to 170–190 MiB. The limit bounds that under heavy load: 500
// agents peaked at 270 MiB, against 441 MiB at 400 % without it.
func collectLessOften() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(400)
	debug.SetMemoryLimit(256 << 20)
}
