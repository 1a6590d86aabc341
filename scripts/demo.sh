#!/usr/bin/env bash
# What `make run` shows: the gateway on the default store, in the foreground.
# Open the printed URL; point agents at its /mcp. Ctrl+C stops it.
set -euo pipefail
lm=${LM:-./bin/lm}
addr=${LM_GATEWAY_ADDR:-127.0.0.1:7437}
echo "lm gateway: the page is at http://$addr/ — agents: {\"url\": \"http://$addr/mcp\"} — Ctrl+C stops it" >&2
exec "$lm" gateway --addr "$addr"
