#!/usr/bin/env bash
# Folds a ~150 MB transcript with `acp-ext state` (unbounded and
# --bounded) and lints the same file with `acp-ext check`, in paired rounds:
# each round runs the three commands back to back, so a round's ratios
# compare runs made under the same load. Prints per command the median and
# best wall time, the median (min–max) of the rounds' ratios to `check`,
# and the peak resident memory (GNU time's maximum RSS) of each command.
#
# The transcript: `probe` drives `serve` through `tap --record` once (every
# script command, subagents included), then that session's messages are
# repeated with a new session id per copy (JSON-RPC ids renumbered, one
# initialize for the whole file), so the file is one long connection with
# thousands of sessions, as a long-lived client would see.
#
# Usage: benches/state-vs-check.sh [MB] (default 150); RUNS=N (default 7);
# KEEP=1 keeps the generated transcript (its path is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${1:-150}
runs=${RUNS:-7}
target=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d)
if [[ -z ${KEEP:-} ]]; then trap 'rm -rf "$work"' EXIT; fi

cargo build --release -q -p acp-ext --bin acp-ext
bin="$target/release/acp-ext"

prompts=(hello /tool "/subagents 4" "/background 0.05" "/schedule 0.05" /compact
  "/goal set ship" "/title Bench" /limits "/slow 0.2")
args=()
for p in "${prompts[@]}"; do args+=(--prompt "$p"); done
"$bin" probe --quiet "${args[@]}" -- "$bin" tap --record "$work/one.jsonl" -- "$bin" serve >/dev/null

python3 - "$work/one.jsonl" "$work/big.jsonl" "$mb" <<'EOF'
import json, sys
src, dst, mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
records = [json.loads(l) for l in open(src)]
init_id = next(r["msg"]["id"] for r in records if r.get("msg", {}).get("method") == "initialize")
def is_init(r):
    m = r.get("msg", {})
    return m.get("method") == "initialize" or ("method" not in m and m.get("id") == init_id)
sid = next(r["msg"]["result"]["sessionId"] for r in records
           if isinstance(r.get("msg", {}).get("result"), dict) and "sessionId" in r["msg"]["result"])
# Every session of the record shares the agent's per-connection prefix.
prefix = sid.rsplit("-", 1)[0] + "-"
rest = [r for r in records if not is_init(r) and "msg" in r]
with open(dst, "w") as out:
    for r in records:
        if is_init(r):
            out.write(json.dumps(r) + "\n")
    size, k = 0, 0
    while size < mb * 1_000_000:
        k += 1
        for r in rest:
            m = json.loads(json.dumps(r["msg"]).replace(prefix, f"bench-{k}-"))
            if isinstance(m.get("id"), int):
                m["id"] += 100_000 * k
            line = json.dumps({"dir": r["dir"], "t": r.get("t", 0), "msg": m})
            out.write(line + "\n")
            size += len(line) + 1
EOF
file="$work/big.jsonl"
echo "transcript: $(du -m "$file" | cut -f1) MB, $(wc -l <"$file") lines${KEEP:+ ($file)}"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

names=(check state state-bounded)
cmds=("$bin check --format tap $file"
  "$bin state --json --format tap $file"
  "$bin state --json --bounded --format tap $file")
declare -A times rss
for ((r = 0; r < runs; r++)); do
  for i in 0 1 2; do
    out=$({ /usr/bin/time -f '%e %M' ${cmds[$i]} >/dev/null; } 2>&1 | tail -1)
    times[$i]+="${out% *} "
    rss[$i]="${out#* }"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$runs" "${times[0]}" "${times[1]}" "${times[2]}" "${rss[0]}" "${rss[1]}" "${rss[2]}" <<'EOF'
import statistics, sys
runs = int(sys.argv[1])
t = [list(map(float, sys.argv[2 + i].split())) for i in range(3)]
rss = [int(sys.argv[5 + i]) for i in range(3)]
names = ["check", "state", "state --bounded"]
print(f"{'command':<18} {'median':>8} {'best':>8}  {'ratio to check (median, min-max)':<34} {'max RSS':>9}")
for i in range(3):
    ratios = [t[0][r] / t[i][r] for r in range(runs)]
    print(f"{names[i]:<18} {statistics.median(t[i]):>7.2f}s {min(t[i]):>7.2f}s  "
          f"{statistics.median(ratios):>5.2f}x ({min(ratios):.2f}-{max(ratios):.2f}x){'':<14} {rss[i] // 1024:>6} MB")
EOF
