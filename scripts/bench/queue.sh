#!/usr/bin/env bash
# Queue and foundation benchmarks (issue: foundation and lm queue): cold
# start against a Go hello-world, wake-up latency across processes, what
# waiting costs per minute, queue
# throughput, the MCP stdio round trip against a minimal mcp-go server, and
# the pending list's cost as consumed history grows.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lm=${LM:-$PWD/bin/lm}

mkdir -p "$work/hello"
cat > "$work/hello/main.go" <<'GO'
package main

import "os"

func main() { os.Stdout.WriteString("hello\n") }
GO
(cd "$work/hello" && printf 'module hello\n\ngo 1.26\n' > go.mod && go build -o hello .)
go build -o "$work/lmbench" ./cmd/lmbench

"$work/lmbench" coldstart "$lm" "$work/hello/hello"
echo
"$work/lmbench" wakeup "$lm"
echo
"$work/lmbench" idle "$lm"
echo
"$work/lmbench" cost "$lm"
echo
"$work/lmbench" throughput "$lm"
echo
"$work/lmbench" mcp "$lm"
echo
echo "## Pending list as history grows"
echo
echo "\`queue_list --status pending\` (10 pending) with consumed history of two sizes, in process (Go benchmark):"
echo
echo '```'
go test ./pkg/queue -run '^$' -bench 'ListPending' -benchtime 200x | grep -E '^Benchmark'
echo '```'
