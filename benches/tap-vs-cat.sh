#!/usr/bin/env bash
# Pushes a ~70 MB JSONL stream of ACP messages (session/update chunks and tool
# call updates, some prompts) through `acp-ext tap -- cat` and through `cat`,
# in the same pipeline position, and prints the best wall time of each and
# tap's throughput as a share of cat's:
#
#   cat FILE | cat                              | cat > /dev/null
#   cat FILE | acp-ext tap -- cat               | cat > /dev/null   (validation on)
#   cat FILE | acp-ext tap --no-validate -- cat | cat > /dev/null
#   cat FILE | acp-ext tap --record R -- cat    | cat > /dev/null   (validation and jsonl record)
#
# Checks that the bytes come out unchanged, then runs the latency bench
# (crates/acp-ext/examples/tap_latency.rs: one message at a time through
# `cat` and through `tap -- cat`, p50/p99 of the round trip and the latency
# the tap adds). Usage: benches/tap-vs-cat.sh [MB] (default 70); RUNS=N
# (default 7) runs of each pipeline, best one kept (the machine may be
# shared: best-of is the least noisy figure); LATENCY_MESSAGES=N (default
# 5000).
#
# With --record, forwarding runs as fast, but the tap exits only once the
# record is complete: that line times the recorder.
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${1:-70}
runs=${RUNS:-7}
target=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release -q -p acp-ext --bin acp-ext --example tap_latency
bin="$target/release/acp-ext"

awk -v size="$mb" 'BEGIN {
  target = size * 1000000; n = 0; total = 0;
  while (total < target) {
    n++; r = n % 10;
    if (r < 6) {
      line = sprintf("{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"sess_7f3a9c\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"Chunk %d of the answer: the quick brown fox jumps over the lazy dog, again and again.\"}}}}", n);
    } else if (r < 9) {
      line = sprintf("{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"sess_7f3a9c\",\"update\":{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"call_%d\",\"status\":\"completed\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"src/main.rs:12: fn main() { println!(\\\"hello\\\"); }\\nsrc/lib.rs:40: pub fn run() -> Result<(), Error> { Ok(()) }\"}}],\"_meta\":{\"lody\":{\"toolName\":\"grep\"}}}}}", n);
    } else {
      line = sprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"sess_7f3a9c\",\"prompt\":[{\"type\":\"text\",\"text\":\"Please refactor the parser module and keep the public API stable.\"}]}}", n);
    }
    print line; total += length(line) + 1;
  }
}' > "$work/in.jsonl"
size=$(wc -c < "$work/in.jsonl")
lines=$(wc -l < "$work/in.jsonl")
want=$(cksum < "$work/in.jsonl")

# Fidelity first: the bytes through the tap are the bytes in.
got=$(cat "$work/in.jsonl" | "$bin" tap --record "$work/rec.jsonl" -- cat | cksum)
[ "$got" = "$want" ] || { echo "tap changed the bytes" >&2; exit 1; }

best() { # best wall time in seconds over $runs runs of the pipeline "$1"
  local best=999999999999 t s e
  for _ in $(seq "$runs"); do
    s=$(date +%s%N)
    bash -c "$1" 2>> "$work/stderr"
    e=$(date +%s%N)
    t=$(( e - s ))
    if (( t < best )); then best=$t; fi
  done
  echo "$best"
}

src="cat '$work/in.jsonl'"
sink="cat > /dev/null"
t_cat=$(best "$src | cat | $sink")
t_tap=$(best "$src | '$bin' tap -- cat | $sink")
t_nov=$(best "$src | '$bin' tap --no-validate -- cat | $sink")
t_rec=$(best "$src | '$bin' tap --record '$work/rec.jsonl' -- cat | $sink")

mbps() { echo "scale=1; $size / ($1 / 1000)" | bc -l; }  # bytes per µs*1000 = MB/s
pct() { echo "scale=1; 100 * $t_cat / $1" | bc -l; }
printf '%s lines, %s bytes, best of %s runs\n' "$lines" "$size" "$runs"
printf '%-34s %8s ms %8s MB/s\n' "cat" "$((t_cat / 1000000))" "$(mbps "$t_cat")"
printf '%-34s %8s ms %8s MB/s  %5s %% of cat\n' "tap -- cat (validation on)" "$((t_tap / 1000000))" "$(mbps "$t_tap")" "$(pct "$t_tap")"
printf '%-34s %8s ms %8s MB/s  %5s %% of cat\n' "tap --no-validate -- cat" "$((t_nov / 1000000))" "$(mbps "$t_nov")" "$(pct "$t_nov")"
printf '%-34s %8s ms %8s MB/s  %5s %% of cat\n' "tap --record -- cat (+validation)" "$((t_rec / 1000000))" "$(mbps "$t_rec")" "$(pct "$t_rec")"
grep -h 'off the forwarding path' "$work/stderr" | sort | uniq -c | sort -rn | head -n 3 || true

echo
"$target/release/examples/tap_latency" "${LATENCY_MESSAGES:-5000}" "$bin"
