#!/usr/bin/env bash
# lm servers call: a one-shot tool call on a stdio server (spawn, initialize,
# call, exit) against the official inspector CLI doing the same, in the same
# run, on @modelcontextprotocol/server-everything. Target: ≤ 0.5×.
set -euo pipefail
: "${LM:?set LM to the lm binary}"
prefix=${LM_TEST_NODE_PREFIX:-$HOME/.cache/lm-test-node}
if [ ! -x "$prefix/node_modules/.bin/mcp-inspector-cli" ] || [ ! -x "$prefix/node_modules/.bin/mcp-server-everything" ]; then
  npm install --no-audit --no-fund --prefix "$prefix" @modelcontextprotocol/server-everything @modelcontextprotocol/inspector-cli >&2
fi
server="$prefix/node_modules/.bin/mcp-server-everything"
# The inspector CLI finds its own package.json relative to the working
# directory, so it runs from its build directory.
inspector_dir="$prefix/node_modules/@modelcontextprotocol/inspector-cli/build"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LM_HOME="$work/home"
runs=${RUNS:-15}

# median_ms CMD…: the median wall time of $runs runs, in milliseconds.
median_ms() {
  local times=() start end
  for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    "$@" >/dev/null 2>&1
    end=$(date +%s%N)
    times+=($(( (end - start) / 1000000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

lm_call() { "$LM" servers call echo '{"message":"hi"}' -- "$server"; }
inspector_call() { (cd "$inspector_dir" && node cli.js --cli "$server" --method tools/call --tool-name echo --tool-arg message=hi); }
server_alone() { node "$server" </dev/null; }

lm_call 2>/dev/null | grep -q 'Echo: hi' || { echo "lm servers call failed" >&2; exit 1; }
inspector_call 2>/dev/null | grep -q 'Echo: hi' || { echo "the inspector CLI failed" >&2; exit 1; }

lm_ms=$(median_ms lm_call)
inspector_ms=$(median_ms inspector_call)
server_ms=$(median_ms server_alone)

echo "## MCP client: one-shot tool call"
echo
echo "\`lm servers call echo '{\"message\":\"hi\"}' -- mcp-server-everything\` (spawn, initialize, call, exit) against"
echo "\`mcp-inspector-cli --cli mcp-server-everything --method tools/call --tool-name echo --tool-arg message=hi\`, median of $runs runs each:"
echo
echo "| | median |"
echo "|---|---|"
echo "| lm servers call | ${lm_ms} ms |"
echo "| inspector CLI | ${inspector_ms} ms |"
echo "| the server alone starting and exiting on a closed stdin | ${server_ms} ms |"
echo
awk -v a="$lm_ms" -v b="$inspector_ms" 'BEGIN {printf "**Ratio lm / inspector: %.2f×** (target ≤ 0.5×).\n", a / b}'
