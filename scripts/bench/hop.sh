#!/usr/bin/env bash
# The hub's hop against the real peers: one tools/call of an mcp-go echo
# server directly over stdio, over its own streamable HTTP, through lm
# gateway (per server and aggregated), supergateway and the npm mcp-proxy,
# from a bare JSON-RPC client and from the TypeScript SDK's client.
set -euo pipefail
: "${LM:?set LM to the lm binary}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$(dirname "$0")/../.."
bin=testdata/node/node_modules/.bin
if [ ! -x "$bin/supergateway" ] || [ ! -x "$bin/mcp-proxy" ]; then
  npm ci --prefix testdata/node --no-audit --no-fund >&2 || echo "npm ci failed: the peers' rows will say they are missing" >&2
fi
go build -o "$work/lmbench" ./cmd/lmbench
"$work/lmbench" hop "$LM" "$PWD/$bin"
