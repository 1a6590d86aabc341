#!/usr/bin/env bash
# The queue on PostgreSQL, in a private cluster the benchmark starts and
# removes: claim throughput against a bare SKIP LOCKED loop on the same
# database, and the wake-up latency between two LM_HOMEs sharing it. It
# prints why it measured nothing when PostgreSQL is not installed.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lm=${LM:-$PWD/bin/lm}
go build -o "$work/lmbench" ./cmd/lmbench
"$work/lmbench" postgres "$lm"
