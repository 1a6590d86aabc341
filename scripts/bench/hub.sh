#!/usr/bin/env bash
# lm gateway as an MCP hub: tools/call of server-everything's echo through
# /mcp/{server} and the aggregated /mcp against the same child reached
# directly over stdio in the same run (latency added at p50/p99, calls/s
# with 16 clients), memory with 5 children, and start → servers ready.
set -euo pipefail
: "${LM:?set LM to the lm binary}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$(dirname "$0")/../.."
everything=testdata/node/node_modules/.bin/mcp-server-everything
if [ ! -x "$everything" ]; then
  npm ci --prefix testdata/node --no-audit --no-fund >&2
fi
go build -o "$work/lmbench" ./cmd/lmbench
"$work/lmbench" hub "$LM" "$PWD/$everything"
