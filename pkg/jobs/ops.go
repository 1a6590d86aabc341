package jobs

import (
	"github.com/google/jsonschema-go/jsonschema"

	"lmtool.dev/lm/pkg/op"
)

// Ops are `lm jobs …` and the MCP tools run_task and jobs_*.
func Ops() []op.Operation {
	return []op.Operation{
		op.New(op.Meta{
			Name: "jobs_start", Path: []string{"jobs", "start"},
			Callers: op.PersonOnly,
			Summary: "Start a task or a command as a background job",
			Description: "The words after -- alone are a command, run as is without a shell. Otherwise the first word names a task when the project defines one " +
				"(the rest, and any words after --, are its arguments), and the words are the command when it does not. lm's own flags go before --. " +
				"The job is owned by its own supervisor process and outlives lm. " +
				"Where the system allows it (a writable cgroup v2) the job runs in a cgroup of its own, so stopping it, or finding its supervisor killed, ends every process it started, also those that left its session (containment cgroup in its record); " +
				"elsewhere, or with LM_JOBS_CGROUP=off, lm ends its process group and the processes its supervisor recorded (containment recorded). Beyond max_running running jobs (default 8; [jobs] max_running in $LM_HOME/config.toml, or LM_JOBS_MAX_RUNNING) it waits queued. " +
				"With --wait it returns as soon as the job ends, with the tail of its output, and exits with the job's own status as lm jobs wait does " +
				"(7 when the wait ended first; without --wait, 0 once the job is started). A task the human allowlist denies is refused (exit 5), one whose runner is not installed too (exit 6). " +
				"Not available over MCP: agents use run_task, which checks the MCP allowlist.",
			Examples: "lm jobs start test --wait 2m\nlm jobs start test -- -run TestX\nlm jobs start -r --jq .job.job_id -- npm run dev --port 5173\nlm jobs start --pty --follow -- ./interactive.sh",
			Args:     []string{"command"}, Trailing: "argv",
			Aliases: map[string][]string{"follow": {"f"}},
			Effect:  op.Destructive, CLIOnly: true,
		}, StartCommand),
		op.New(op.Meta{
			Name: "jobs_list", Path: []string{"jobs", "list"},
			Callers: op.Agents,
			Summary: "List jobs, oldest first",
			// --status filters, as on lm queue list.
			Aliases: map[string][]string{"state": {"status"}},
			Effect:  op.ReadOnly, Idempotent: true,
		}, List),
		op.New(op.Meta{
			Name: "jobs_status", Path: []string{"jobs", "status"},
			Callers: op.Agents,
			Summary: "Show a job's state, times, exit code and output size", Args: []string{"id"},
			Description: "The job is id (a positional argument on the CLI) or job_id, as run_task spells it.",
			Effect:      op.ReadOnly, Idempotent: true,
		}, Status),
		op.New(op.Meta{
			Name: "jobs_logs", Path: []string{"jobs", "logs"},
			Callers: op.Agents,
			Summary: "Read a job's output from a cursor",
			Description: "Cursors are byte offsets over everything the job ever wrote: pass the returned to as the next from. " +
				"evicted counts bytes before from that the ring buffer no longer holds; eof is true once the job ended and everything was read. " +
				"--wait blocks until there is new output or the job ends; --follow prints chunks as JSON Lines until the end.",
			Examples: "lm jobs logs j_01J… -r --jq .data\nlm jobs logs j_01J… --from 4096 --wait 30s\nlm jobs logs j_01J… --follow -r --jq .data",
			Args:     []string{"id"},
			Aliases:  map[string][]string{"follow": {"f"}},
			Effect:   op.ReadOnly, Idempotent: true,
		}, Logs),
		op.New(op.Meta{
			Name: "jobs_wait", Path: []string{"jobs", "wait"},
			Callers: op.Agents,
			Summary: "Wait until a job ends",
			Description: "Exits with the job's own status, as timeout(1) and the shell's wait do: its exit code, 128+N when signal N ended it " +
				"(143 after lm jobs stop or its TTL), 1 when it could not start; 7 when --wait (--timeout) passed first (the job runs on). The output says the same in job.state and job.exit_code.",
			Args: []string{"id"},
			// --wait DURATION, as on jobs start and jobs logs.
			Aliases: map[string][]string{"timeout": {"wait"}},
			Effect:  op.ReadOnly, Idempotent: true,
		}, Wait),
		op.New(op.Meta{
			Name: "jobs_stop", Path: []string{"jobs", "stop"},
			Callers: op.Agents,
			Summary: "Stop a job: SIGTERM to its processes, SIGKILL after the grace period", Args: []string{"id"},
			Description: "The job is id (a positional argument on the CLI) or job_id, as run_task spells it. " +
				"The signals go to every process in the job's cgroup when it runs in one, else to its process group.",
			Effect: op.Destructive, Idempotent: true,
		}, Stop),
		op.New(op.Meta{
			Name: "jobs_prune", Path: []string{"jobs", "prune"},
			Callers:     op.PersonOnly,
			Summary:     "Delete finished jobs and their output",
			Description: "--older-than takes the durations every lm field does: 90s, 30m, 36h, 7d, 2w.",
			Examples:    "lm jobs prune --older-than 7d",
			Effect:      op.Destructive, Idempotent: true, CLIOnly: true,
		}, Prune),
		op.New(op.Meta{
			Name: "jobs_supervise", Path: []string{"jobs", "supervise"},
			Callers: op.PersonOnly,
			Summary: "Supervise one job (started by lm jobs start; not for direct use)", Args: []string{"id"},
			Effect: op.Destructive, CLIOnly: true, Hidden: true,
		}, Supervise),
		op.New(op.Meta{
			Name: "run_task", Path: []string{"jobs", "run-task"},
			Callers: op.Agents,
			Summary: "Start, inspect or stop a project task as a job, if the MCP allowlist allows it",
			Description: "op start runs task (with args, env, cwd under the project, orphan_ttl_sec) and returns its job_id; wait_ms waits for a quick task to end and returns its output. " +
				"With stream true the server sends logging notifications {job_id, chunk} as output arrives. " +
				"op status and op stop take job_id (stop: SIGTERM, then SIGKILL after grace_ms). " +
				"A task the MCP allowlist does not allow is refused with {ok: false, code: NotAllowlisted, hint} (exit 5 on the CLI); only a person can change the allowlist.",
			Examples: "lm jobs run-task --op start --task test --wait-ms 60000",
			Effect:   op.Destructive,
		}, RunTask),
	}
}

// RefineSchema lists the states.
func (ListInput) RefineSchema(s *jsonschema.Schema) {
	s.Properties["state"].Enum = []any{Queued, Running, Exited, Failed, Stopped}
}

// RefineSchema lists the operations.
func (RunTaskInput) RefineSchema(s *jsonschema.Schema) {
	s.Properties["op"].Enum = []any{"start", "status", "stop"}
}
