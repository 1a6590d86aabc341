#!/usr/bin/env bash
# lm tasks / lm jobs: discovery cost against starting up, job start latency,
# ring-buffer throughput (piped and pty) and the supervisor's memory.
set -euo pipefail
: "${LM:?set LM to the lm binary}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LM_HOME="$work/home"
proj="$work/proj"
mkdir -p "$proj/.github/workflows" "$proj/docs"

# A project with 12 task files and 500 tasks.
{
  for i in $(seq 1 150); do printf 'target%d: ## target %d\n\t@true\n' "$i" "$i"; done
} > "$proj/Makefile"
{ printf '{"scripts":{'; for i in $(seq 1 100); do printf '"script%d":"echo %d"' "$i" "$i"; [ "$i" -lt 100 ] && printf ','; done; printf '}}\n'; } > "$proj/package.json"
{ echo '[project.scripts]'; for i in $(seq 1 50); do echo "py$i = \"m:f$i\""; done; } > "$proj/pyproject.toml"
{ echo "version: '3'"; echo 'tasks:'; for i in $(seq 1 50); do printf '  task%d:\n    desc: task %d\n' "$i" "$i"; done; } > "$proj/Taskfile.yml"
{ for i in $(seq 1 60); do printf '# recipe %d\nrecipe%d arg="x":\n    echo {{arg}}\n' "$i" "$i"; done; } > "$proj/justfile"
{ echo '{"tasks":{'; for i in $(seq 1 20); do printf '"turbo%d":{}' "$i"; [ "$i" -lt 20 ] && printf ','; done; echo '}}'; } > "$proj/turbo.json"
echo '<project/>' > "$proj/pom.xml"
{ for i in $(seq 1 20); do echo "task gradle$i {"; echo "}"; done; } > "$proj/build.gradle"
for i in $(seq 1 10); do echo "name: wf$i" > "$proj/.github/workflows/wf$i.yml"; done
{ echo 'services:'; for i in $(seq 1 10); do printf '  svc%d:\n    image: x\n' "$i"; done; } > "$proj/docker-compose.yml"
{ for i in $(seq 1 10); do echo "add_custom_target(cm$i COMMAND true)"; done; } > "$proj/CMakeLists.txt"
{ echo '{"tasks":{'; for i in $(seq 1 10); do printf '"deno%d":"echo"' "$i"; [ "$i" -lt 10 ] && printf ','; done; echo '}}'; } > "$proj/deno.json"
cd "$proj"
count=$("$LM" tasks list -r --jq '.tasks | length')

# mean wall time of N runs of a command, in microseconds
mean_us() {
  local n=$1; shift
  local start end
  start=$(date +%s%N)
  for _ in $(seq 1 "$n"); do "$@" >/dev/null; done
  end=$(date +%s%N)
  echo $(( (end - start) / n / 1000 ))
}
"$LM" version >/dev/null
ver=$(mean_us 50 "$LM" version)
list=$(mean_us 50 "$LM" tasks list)

# job start latency: command issued -> child running (the child stamps its start time)
lat=()
for _ in $(seq 1 40); do
  t0=$(date +%s%N)
  id=$("$LM" -r --jq .job.job_id jobs start -- sh -c 'date +%s%N')
  out=$("$LM" -r --jq .data jobs logs "$id" --wait 10s)
  lat+=($(( (${out%%$'\n'*} - t0) / 1000 )))
done
sorted=$(printf '%s\n' "${lat[@]}" | sort -n)
p50=$(echo "$sorted" | awk '{a[NR]=$1} END {print a[int(NR*0.5)+1]}')
p99=$(echo "$sorted" | awk '{a[NR]=$1} END {print a[NR]}')
fork=$(mean_us 40 sh -c 'true')

# throughput through the ring: 1 GiB piped, 256 MiB through a pty; the reference is cat to /dev/null
gib=1073741824
ref_start=$(date +%s%N); head -c $gib /dev/zero | cat > /dev/null; ref_ns=$(( $(date +%s%N) - ref_start ))
t0=$(date +%s%N)
id=$("$LM" -r --jq .job.job_id jobs start --log-size 4194304 -- head -c $gib /dev/zero)
for _ in $(seq 1 500); do # the supervisor registers once it has started
  sup=$("$LM" -r --jq '.job.supervisor_pid // empty' jobs status "$id")
  [ -n "$sup" ] && break
done
# the supervisor's peak RSS (VmHWM only grows): the last reading before it exits
( while hwm=$(awk '/VmHWM/ {print $2}' "/proc/$sup/status" 2>/dev/null) && [ -n "$hwm" ]; do
    echo "$hwm"; sleep 0.1
  done ) > "$work/hwm" &
sampler=$!
"$LM" jobs wait "$id" >/dev/null
pipe_ns=$(( $(date +%s%N) - t0 ))
wait "$sampler"
rss=$(tail -n 1 "$work/hwm"); rss=${rss:-?}
pty_bytes=268435456
t0=$(date +%s%N)
"$LM" jobs start --pty --log-size 4194304 --wait 10m -- head -c $pty_bytes /dev/zero >/dev/null
pty_ns=$(( $(date +%s%N) - t0 ))

echo "## Tasks and jobs"
echo
echo "| Measure | Result | Reference | Ratio |"
echo "|---|---|---|---|"
echo "| \`lm tasks list\`, 12 files / $count tasks | ${list} µs | \`lm version\` ${ver} µs | $(awk "BEGIN {printf \"%.2f×\", $list/$ver}") (target ≤ 2×) |"
echo "| job start latency p50 / p99 (40 starts) | ${p50} / ${p99} µs | \`sh -c true\` ${fork} µs | $(awk "BEGIN {printf \"%.1f× / %.1f×\", $p50/$fork, $p99/$fork}") |"
echo "| 1 GiB piped through the ring | $(awk "BEGIN {printf \"%.0f MB/s\", $gib/$pipe_ns*1000}") | \`head \| cat\` $(awk "BEGIN {printf \"%.0f MB/s\", $gib/$ref_ns*1000}") | $(awk "BEGIN {printf \"%.2f×\", $ref_ns/$pipe_ns}") (target ≥ 300 MB/s) |"
echo "| 256 MiB through a pty | $(awk "BEGIN {printf \"%.0f MB/s\", $pty_bytes/$pty_ns*1000}") | | |"
echo "| supervisor peak RSS while streaming | ${rss} KiB | | |"
