#!/usr/bin/env bash
# Instructions, not seconds: `acp-ext state --json` and `acp-ext check --json`
# under valgrind's callgrind on the start of the follower's benchmark input
# (`benches/gen-events.py`, each payload wrapped as a JSON-RPC notification,
# as `benches/follow-vs-python.sh` writes it). An instruction count does not
# move between runs, so it compares two builds where wall time, on a busy or
# shared machine, moves by a third between rounds; it says nothing of cache
# misses, page faults or how the two threads overlap, which only timed,
# paired rounds show.
#
# Prints each command's total, then the functions with the most inclusive
# instructions (the library's and the tool's own, and serde_json's parse).
#
# Usage: benches/count-instructions.sh [EVENTS] (default 20000); TOP=N (default
# 25) functions listed; KEEP=1 keeps the callgrind files (their paths are
# printed). Needs valgrind (`callgrind_annotate` comes with it).
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-20000}
top=${TOP:-25}
if ! command -v valgrind >/dev/null || ! command -v callgrind_annotate >/dev/null; then
  echo "count-instructions: valgrind is not installed; nothing counted" >&2
  exit 2
fi
# Its own target folder: line tables change the release build's fingerprint.
target=${CARGO_TARGET_DIR:-target}/instructions
work=$(mktemp -d)
if [[ -z ${KEEP:-} ]]; then trap 'rm -rf "$work"' EXIT; fi

# Line tables, so that instructions are named by function.
CARGO_PROFILE_RELEASE_DEBUG=line-tables-only CARGO_TARGET_DIR="$target" \
  cargo build --release -q -p acp-ext --bin acp-ext
bin="$target/release/acp-ext"
input="$work/rpc.jsonl"
python3 benches/gen-events.py "$events" | python3 -c 'import sys
for l in sys.stdin: sys.stdout.write("{\"jsonrpc\":\"2.0\",\"method\":\"_lody/subagents/event\",\"params\":" + l.rstrip("\n") + "}\n")' > "$input"
echo "input: $events events, $(($(stat -c %s "$input") / 1000)) kB"

for command in state check; do
  out="$work/callgrind.$command"
  # `check` exits with 1: a tenth of the events break the contract.
  status=0
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" "$command" --json "$input" \
    > /dev/null 2> "$work/valgrind.$command" || status=$?
  if ((status > 1)); then
    echo "count-instructions: $command exited with $status" >&2
    cat "$work/valgrind.$command" >&2
    exit 1
  fi
  total=$(grep -o 'refs: *[0-9,]*' "$work/valgrind.$command" | tr -dc '0-9')
  echo
  echo "$command --json: $total instructions ($((total / events)) per event)"
  callgrind_annotate --inclusive=yes "$out" 2>/dev/null \
    | grep -E '(acp_extension_core|acp_ext)::|serde_json::de::from_trait' \
    | grep -v -E 'lang_start|backtrace|acp_ext::main|acp_ext::run\b' \
    | sed -E 's/^ *([0-9,]+) \( *([0-9.]+)%\) +[^:]*:(.*) \[[^]]*\]$/\1\t\2\t\3/' \
    | awk -F'\t' -v top="$top" 'NF == 3 && !seen[$3]++ && n < top {printf "  %14s %6s%%  %s\n", $1, $2, substr($3, 1, 110); n++}'
  if [[ -n ${KEEP:-} ]]; then echo "  callgrind file: $out"; fi
done
