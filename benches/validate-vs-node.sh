#!/usr/bin/env bash
# Times whole-process `acp-ext validate --as subagent-event --quiet` against
# whole-process Node `JSON.parse` of every line, on the same generated
# 200,000-line file (mostly text chunks and tool calls, some progress and
# snapshots, about 1 in 10 invalid). Prints the figures for BENCHMARKS.md.
#
# Two readings of a noisy machine:
# - best of RUNS wall times for each command;
# - RUNS paired rounds, each running Node, one thread and both cores back
#   to back, reported as the median of the per-round ratios (a slow spell
#   hits the three commands of a round alike).
# The load average is printed before and after: figures taken under load
# say so.
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-200000}
runs=${RUNS:-5}
target=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release -q -p acp-ext --bin acp-ext
cargo build --release -q -p acp-extension-core --example gen_subagent_events
bin=$target/release/acp-ext
"$target/release/examples/gen_subagent_events" "$lines" > "$work/events.jsonl"
size=$(wc -c < "$work/events.jsonl")

cat > "$work/parse.js" <<'JS'
// Bare JSON.parse of every line: cheaper than any Node validator.
const fs = require('fs');
const text = fs.readFileSync(process.argv[2], 'utf8');
let n = 0;
for (const line of text.split('\n')) {
  if (line.length === 0) continue;
  JSON.parse(line);
  n++;
}
console.log(n + ' parsed');
JS

node_cmd=(node "$work/parse.js" "$work/events.jsonl")
rust1_cmd=("$bin" validate --as subagent-event --quiet --threads 1 "$work/events.jsonl")
rust2_cmd=("$bin" validate --as subagent-event --quiet "$work/events.jsonl")

wall() { # wall time in seconds of one run of "$@" (its exit status ignored)
  local s e
  s=$(date +%s.%N)
  "$@" > /dev/null || true
  e=$(date +%s.%N)
  echo "$e - $s" | bc -l
}

min() { printf '%s\n' "$@" | sort -g | head -1; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ratio() { echo "$1 / $2" | bc -l | xargs printf '%.1f'; }

echo "input: $lines lines, $size bytes; $runs runs; $(nproc) cores"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "check: $("$bin" validate --as subagent-event --quiet "$work/events.jsonl" || true)"

# Warm the page cache and both programs once.
wall "${node_cmd[@]}" > /dev/null
wall "${rust2_cmd[@]}" > /dev/null

node=() rust1=() rust2=() r1=() r2=()
for _ in $(seq "$runs"); do
  n=$(wall "${node_cmd[@]}")
  a=$(wall "${rust1_cmd[@]}")
  b=$(wall "${rust2_cmd[@]}")
  node+=("$n") rust1+=("$a") rust2+=("$b")
  r1+=("$(echo "$n / $a" | bc -l)") r2+=("$(echo "$n / $b" | bc -l)")
done

bn=$(min "${node[@]}") b1=$(min "${rust1[@]}") b2=$(min "${rust2[@]}")
printf 'best of %s:\n' "$runs"
printf '  node JSON.parse:              %.3fs\n' "$bn"
printf '  acp-ext validate (1 thread):  %.3fs  (%sx faster)\n' "$b1" "$(ratio "$bn" "$b1")"
printf '  acp-ext validate (all cores): %.3fs  (%sx faster)\n' "$b2" "$(ratio "$bn" "$b2")"
printf 'paired rounds (median of %s per-round ratios):\n' "$runs"
printf '  1 thread:  %sx faster (rounds: %s)\n' "$(median "${r1[@]}" | xargs printf '%.1f')" \
  "$(printf '%.1f ' "${r1[@]}")"
printf '  all cores: %sx faster (rounds: %s)\n' "$(median "${r2[@]}" | xargs printf '%.1f')" \
  "$(printf '%.1f ' "${r2[@]}")"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
