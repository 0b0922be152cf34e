#!/usr/bin/env bash
# Times whole-process `acp-ext validate --as subagent-event --quiet` against
# whole-process Node `JSON.parse` of every line, on the same generated
# 200,000-line file (mostly text chunks and tool calls, some progress and
# snapshots, about 1 in 10 invalid). Prints the figures for BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-200000}
runs=${RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release -q -p acp-ext --bin acp-ext
cargo build --release -q -p acp-extension-core --example gen_subagent_events
bin=target/release/acp-ext
target/release/examples/gen_subagent_events "$lines" > "$work/events.jsonl"
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

best() { # best wall time in seconds over $runs runs of "$@"
  local best=999999 t
  for _ in $(seq "$runs"); do
    local s=$(date +%s.%N)
    "$@" > /dev/null
    local e=$(date +%s.%N)
    t=$(echo "$e - $s" | bc -l)
    if (( $(echo "$t < $best" | bc -l) )); then best=$t; fi
  done
  printf '%.3f' "$best"
}

echo "input: $lines lines, $size bytes; best of $runs runs"
echo "check: $($bin validate --as subagent-event --quiet "$work/events.jsonl" || true)"
set +e
rust1=$(best "$bin" validate --as subagent-event --quiet --threads 1 "$work/events.jsonl")
rust2=$(best "$bin" validate --as subagent-event --quiet "$work/events.jsonl")
set -e
node=$(best node "$work/parse.js" "$work/events.jsonl")
echo "node JSON.parse:                  ${node}s"
echo "acp-ext validate (1 thread):      ${rust1}s  ($(echo "$node / $rust1" | bc -l | xargs printf '%.1f')x faster)"
echo "acp-ext validate (all cores):     ${rust2}s  ($(echo "$node / $rust2" | bc -l | xargs printf '%.1f')x faster)"
