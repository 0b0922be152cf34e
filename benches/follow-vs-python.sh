#!/usr/bin/env bash
# The connection follower against Python: 200,000 `_lody/subagents/event`
# notifications (about 82 MB; `benches/gen-events.py`, the mix of a session
# with busy subagents, 1 in 10 invalid), each wrapped as a JSON-RPC
# notification. Each round runs, back to back on the same file:
#
#   python   Python reading it line by line with `json.loads` (what a user
#            would write to fold it themselves; no folding at all);
#   check    `acp-ext check --json`;
#   state    `acp-ext state --json`;
#   bounded  `acp-ext state --bounded --json`.
#
# Prints per command the median and best wall time of the rounds, the
# median (min–max) of the rounds' ratios to Python's time, and the peak
# resident memory (the process's maximum RSS) with its ratio to the input.
#
# Usage: benches/follow-vs-python.sh [EVENTS] (default 200000); RUNS=N
# (default 7); KEEP=1 keeps the generated input (its path is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-200000}
runs=${RUNS:-7}
target=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d)
if [[ -z ${KEEP:-} ]]; then trap 'rm -rf "$work"' EXIT; else echo "input: $work/rpc.jsonl"; fi

cargo build --release -q -p acp-ext --bin acp-ext
bin="$target/release/acp-ext"
input="$work/rpc.jsonl"
python3 benches/gen-events.py "$events" | python3 -c 'import sys
for l in sys.stdin: sys.stdout.write("{\"jsonrpc\":\"2.0\",\"method\":\"_lody/subagents/event\",\"params\":" + l.rstrip("\n") + "}\n")' > "$input"
size=$(stat -c %s "$input")
echo "input: $events events, $((size / 1000000)) MB; $runs paired rounds; load $(cut -d' ' -f1-3 /proc/loadavg)"

declare -A cmd=(
  [python]="python3 -c 'import json,sys
for l in open(sys.argv[1]): json.loads(l)' $input"
  [check]="$bin check --json $input"
  [state]="$bin state --json $input"
  [bounded]="$bin state --bounded --json $input"
)
order=(python check state bounded)
# One warm-up of each (page cache, binaries).
for name in "${order[@]}"; do eval "${cmd[$name]}" >/dev/null 2>&1 || true; done

times="$work/times"
: > "$times"
for ((r = 1; r <= runs; r++)); do
  for name in "${order[@]}"; do
    # Wall time to the microsecond (GNU time prints hundredths: a step of
    # 4 % at these times) and the peak RSS, both of the command's own process.
    python3 - "$r" "$name" "${cmd[$name]}" >> "$times" <<'PY'
import os, subprocess, sys, time
r, name, command = sys.argv[1:4]
start = time.perf_counter()
child = subprocess.Popen(["bash", "-c", "exec " + command], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, _, usage = os.wait4(child.pid, 0)
print(r, name, f"{time.perf_counter() - start:.6f}", usage.ru_maxrss)
PY
  done
done

python3 - "$times" "$size" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1]) if l.strip() and l[0].isdigit()]
size = int(sys.argv[2])
by = {}
for r, name, wall, rss in rows:
    by.setdefault(name, {})[int(r)] = (float(wall), int(rss) * 1024)
py = by["python"]
print(f"{'command':8} {'median':>8} {'best':>8} {'ratio to python, median (min-max)':>36} {'peak RSS':>10} {'RSS/input':>9}")
for name in ["python", "check", "state", "bounded"]:
    runs = by[name]
    walls = [w for w, _ in runs.values()]
    ratios = [runs[r][0] / py[r][0] for r in runs if r in py and py[r][0] > 0]
    rss = max(m for _, m in runs.values())
    ratio = "" if name == "python" else f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
    print(f"{name:8} {statistics.median(walls):7.3f}s {min(walls):7.3f}s {ratio:>36} {rss / 1e6:8.1f}MB {rss / size:8.2f}x")
st = [by["state"][r][0] / by["check"][r][0] for r in by["state"] if r in by["check"]]
print(f"state/check, median of rounds: {statistics.median(st):.2f}")
PY
