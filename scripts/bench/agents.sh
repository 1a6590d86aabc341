#!/usr/bin/env bash
# Many agents on one gateway: 50, then 500 MCP sessions on /mcp looping
# get_user_request while 10,000 instructions are added over HTTP and the
# CLI; every instruction delivered exactly once (or the run fails),
# deliveries/s, add → delivery p50/p99 and the gateway's memory.
set -euo pipefail
: "${LM:?set LM to the lm binary}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$(dirname "$0")/../.."
go build -o "$work/lmbench" ./cmd/lmbench
"$work/lmbench" agents "$LM"
