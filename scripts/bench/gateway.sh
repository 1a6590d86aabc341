#!/usr/bin/env bash
# lm gateway: HTTP API requests/s against a minimal net/http JSON server run
# in the same session, add-to-page latency over SSE to 1, 50 and 200 clients,
# and the gateway's resident memory idle and under load.
set -euo pipefail
: "${LM:?set LM to the lm binary}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$(dirname "$0")/../.."
go build -o "$work/lmbench" ./cmd/lmbench
"$work/lmbench" gateway "$LM"
