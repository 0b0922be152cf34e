#!/usr/bin/env bash
# Times whole-process `acp-ext validate --as subagent-event --quiet` against
# two whole-process Node readers of the same generated 200,000-line file
# (mostly text chunks and tool calls, some progress and snapshots, about 1
# in 10 invalid):
# - bare `JSON.parse` of every line, cheaper than any Node validator;
# - ajv 8 (draft 2020-12) with the kind's JSON Schema from `acp-ext schema`:
#   `JSON.parse`, then the compiled validator. Its verdict on every line is
#   compared with `acp-ext validate --json`'s first; the script stops if
#   one differs. ajv comes from the npm registry (or `AJV_DIR`, a folder
#   whose `node_modules` holds it); without it only `JSON.parse` is timed.
#
# Two readings of a noisy machine:
# - best of RUNS wall times for each command;
# - RUNS paired rounds, each running the Node readers, one thread and both
#   cores back to back, reported as the median of the per-round ratios (a
#   slow spell hits the commands of a round alike).
# The load average is printed before and after: figures taken under load
# say so. Prints the figures for BENCHMARKS.md.
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

cat > "$work/ajv.js" <<'JS'
// Every line through JSON.parse and ajv's compiled validator of the kind's
// schema; `--verdicts` prints each line's verdict instead of the counts.
const fs = require('fs');
const Ajv2020 = require('ajv/dist/2020').default;
const ajv = new Ajv2020({ strict: false });
const validate = ajv.compile(JSON.parse(fs.readFileSync(process.argv[2], 'utf8')));
const text = fs.readFileSync(process.argv[3], 'utf8');
const verdicts = process.argv[4] === '--verdicts';
let valid = 0, invalid = 0;
const out = [];
for (const line of text.split('\n')) {
  if (line.length === 0) continue;
  let ok;
  try { ok = validate(JSON.parse(line)); } catch { ok = false; }
  if (ok) valid++; else invalid++;
  if (verdicts) out.push(ok ? 'true' : 'false');
}
console.log(verdicts ? out.join('\n') : `${valid} valid, ${invalid} invalid`);
JS

ajv_dir=${AJV_DIR:-$work/ajv}
if [[ -z ${AJV_DIR:-} ]] && ! npm install --no-audit --no-fund --silent --prefix "$ajv_dir" ajv@8 > /dev/null 2>&1; then
  echo "ajv: the npm registry is unreachable; timing JSON.parse alone"
  ajv_dir=
fi

node_cmd=(node "$work/parse.js" "$work/events.jsonl")
rust1_cmd=("$bin" validate --as subagent-event --quiet --threads 1 "$work/events.jsonl")
rust2_cmd=("$bin" validate --as subagent-event --quiet "$work/events.jsonl")
ajv_cmd=()
if [[ -n $ajv_dir ]]; then
  "$bin" schema subagent-event > "$work/schema.json"
  ajv_cmd=(env NODE_PATH="$ajv_dir/node_modules" node "$work/ajv.js" "$work/schema.json" "$work/events.jsonl")
  "${ajv_cmd[@]}" --verdicts > "$work/ajv.verdicts"
  "$bin" validate --as subagent-event --json "$work/events.jsonl" \
    | sed -E 's/.*"valid":(true|false).*/\1/' > "$work/ours.verdicts" || true
  if ! cmp -s "$work/ajv.verdicts" "$work/ours.verdicts"; then
    echo "ajv and acp-ext disagree on these lines (line: ajv, acp-ext):"
    paste -d' ' "$work/ajv.verdicts" "$work/ours.verdicts" | awk '$1 != $2 {print NR": "$0}' | head
    exit 1
  fi
  echo "ajv: the same verdict on all $(wc -l < "$work/ajv.verdicts") lines"
fi

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
rounds() { printf '%sx faster (rounds: %s)' "$(median "$@" | xargs printf '%.1f')" "$(printf '%.1f ' "$@")"; }

echo "input: $lines lines, $size bytes; $runs runs; $(nproc) cores"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "check: $("$bin" validate --as subagent-event --quiet "$work/events.jsonl" || true)"

# Warm the page cache and the programs once.
wall "${node_cmd[@]}" > /dev/null
wall "${rust2_cmd[@]}" > /dev/null
[[ -z $ajv_dir ]] || wall "${ajv_cmd[@]}" > /dev/null

node=() ajv=() rust1=() rust2=() n1=() n2=() a1=() a2=()
for _ in $(seq "$runs"); do
  n=$(wall "${node_cmd[@]}")
  x=$n
  [[ -z $ajv_dir ]] || x=$(wall "${ajv_cmd[@]}")
  r=$(wall "${rust1_cmd[@]}")
  s=$(wall "${rust2_cmd[@]}")
  node+=("$n") ajv+=("$x") rust1+=("$r") rust2+=("$s")
  n1+=("$(echo "$n / $r" | bc -l)") n2+=("$(echo "$n / $s" | bc -l)")
  a1+=("$(echo "$x / $r" | bc -l)") a2+=("$(echo "$x / $s" | bc -l)")
done

bn=$(min "${node[@]}") ba=$(min "${ajv[@]}") b1=$(min "${rust1[@]}") b2=$(min "${rust2[@]}")
printf 'best of %s:\n' "$runs"
printf '  node JSON.parse:              %.3fs\n' "$bn"
[[ -z $ajv_dir ]] || printf '  node ajv:                     %.3fs\n' "$ba"
printf '  acp-ext validate (1 thread):  %.3fs  (%sx JSON.parse)\n' "$b1" "$(ratio "$bn" "$b1")"
printf '  acp-ext validate (all cores): %.3fs  (%sx JSON.parse)\n' "$b2" "$(ratio "$bn" "$b2")"
printf 'paired rounds (median of %s per-round ratios):\n' "$runs"
printf '  against JSON.parse, 1 thread:  %s\n' "$(rounds "${n1[@]}")"
printf '  against JSON.parse, all cores: %s\n' "$(rounds "${n2[@]}")"
if [[ -n $ajv_dir ]]; then
  printf '  against ajv, 1 thread:         %s\n' "$(rounds "${a1[@]}")"
  printf '  against ajv, all cores:        %s\n' "$(rounds "${a2[@]}")"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
