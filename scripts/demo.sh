#!/usr/bin/env bash
# A queue round trip on the default store: what `make run` shows until the
# gateway serves the web page.
set -euo pipefail
lm=${LM:-./bin/lm}
echo "store: $($lm store path -r --jq .path)"
echo "+ lm queue add 'summarise the open issues'"
$lm queue add 'summarise the open issues' -r --jq '"added \(.item.id) at position \(.item.position)"'
echo "+ lm queue list --status pending"
$lm queue list --status pending -r --jq '.items[] | "  \(.position). \(.content)"'
echo "+ lm queue next --agent-id demo   (what an agent's get_user_request gets)"
$lm queue next --agent-id demo
echo "+ lm queue status"
$lm queue status --jq '{queue, agent: .agent.agent_id}'
