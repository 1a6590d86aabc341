#!/usr/bin/env bash
# What `make run` shows: the gateway on the default store, in the foreground.
# Open the URL it prints: it carries the page's token, which the page keeps.
# Point agents at its /mcp with a token of their own. Ctrl+C stops it.
set -euo pipefail
lm=${LM:-./bin/lm}
addr=${LM_GATEWAY_ADDR:-127.0.0.1:7437}
# The address is the gateway's to say: port 0 picks a free one.
echo "lm gateway on $addr: open the \"url\" it prints (it carries the page's token)." >&2
echo "Agents: make a token with '$lm gateway token add NAME', then point them at its \"mcp_url\" with \"Authorization: Bearer TOKEN\". Ctrl+C stops it." >&2
exec "$lm" gateway --addr "$addr"
