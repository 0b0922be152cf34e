#!/usr/bin/env bash
# Pushes a ~70 MB JSONL stream of ACP messages (session/update chunks and tool
# call updates, some prompts) through `acp-ext tap -- cat` and through `cat`,
# in the same pipeline position:
#
#   cat FILE | cat                              | cat > /dev/null
#   cat FILE | acp-ext tap -- cat               | cat > /dev/null   (validation on)
#   cat FILE | acp-ext tap --no-validate -- cat | cat > /dev/null
#   cat FILE | acp-ext tap --record R -- cat    | cat > /dev/null   (validation and jsonl record)
#
# in paired rounds: each round runs the four pipelines one after the other,
# so a round's ratios compare runs made under the same load. It prints, per
# pipeline, the median and the best forwarding time (until the sink has read
# every byte), the median of the rounds' throughput ratios to `cat` (the
# figure to quote: best-of flatters a noisy machine), and the same for the
# time until the tap has exited too (it validates what is still queued, and
# with --record finishes the record, before it exits).
#
# Checks that the bytes come out unchanged; then counts how many messages
# the tap validates at 10,000 and 50,000 messages a second and in a flood
# (crates/acp-ext/examples/tap_rate.rs: RATE_SECONDS=N seconds each, default
# 3); then runs the latency bench (crates/acp-ext/examples/tap_latency.rs:
# one message at a time through `cat` and through `tap -- cat`, p50/p99 of
# the round trip and the latency the tap adds).
#
# Usage: benches/tap-vs-cat.sh [MB] (default 70); RUNS=N (default 11)
# rounds; LATENCY_MESSAGES=N (default 5000).
#
# With --record, forwarding runs as fast, but the tap exits only once the
# record is complete: that line times the recorder.
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${1:-70}
runs=${RUNS:-11}
target=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release -q -p acp-ext --bin acp-ext --example tap_latency --example tap_rate
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

time_ns() { # "forwarding,exit": ns until the sink has read everything, and until the
           # whole pipeline (the tap too) has exited, of the pipeline "$1 | SINK"
  local s e k
  s=$(date +%s%N)
  bash -c "$1 | { cat > /dev/null; date +%s%N > '$work/sink'; }" 2>> "$work/stderr"
  e=$(date +%s%N)
  k=$(cat "$work/sink")
  echo "$(( k - s )),$(( e - s ))"
}

src="cat '$work/in.jsonl'"
names=("cat" "tap -- cat (validation on)" "tap --no-validate -- cat" "tap --record -- cat (+validation)")
pipes=("$src | cat"
       "$src | '$bin' tap -- cat"
       "$src | '$bin' tap --no-validate -- cat"
       "$src | '$bin' tap --record '$work/rec.jsonl' -- cat")
: > "$work/times"
for round in $(seq "$runs"); do
  line="$round"
  for i in 0 1 2 3; do line="$line $(time_ns "${pipes[$i]}")"; done
  echo "$line" >> "$work/times"
done

printf '%s lines, %s bytes, %s paired rounds; load average %s\n' "$lines" "$size" "$runs" "$(cut -d' ' -f1-3 /proc/loadavg)"
echo "forwarding: until the sink has read every byte; exit: until the tap has exited too"
echo "(it validates what is still queued first). Ratios: cat's time / the pipeline's, per round."
printf '%-34s %9s %9s %11s %12s %9s %12s\n' "pipeline" "fwd med" "fwd best" "fwd MB/s" "fwd ratio" "exit med" "exit ratio"
awk -v size="$size" -v n0="${names[0]}" -v n1="${names[1]}" -v n2="${names[2]}" -v n3="${names[3]}" '
  function median(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { n++; for (c = 0; c < 4; c++) { split($(c + 2), p, ","); f[c, n] = p[1]; x[c, n] = p[2] } }
  END {
    name[0] = n0; name[1] = n1; name[2] = n2; name[3] = n3
    for (c = 0; c < 4; c++) {
      best = 0
      for (i = 1; i <= n; i++) {
        v[i] = f[c, i]; w[i] = x[c, i]; r[i] = f[0, i] / f[c, i]; q[i] = x[0, i] / x[c, i]
        if (best == 0 || v[i] < best) best = v[i]
      }
      m = median(v, n); mr = median(r, n); mx = median(w, n); mq = median(q, n)
      printf "%-34s %7.1f ms %6.1f ms %11.1f %10.1f %% %6.1f ms %10.1f %%\n", name[c], m / 1e6, best / 1e6, size / (m / 1e3), 100 * mr, mx / 1e6, 100 * mq
    }
  }' "$work/times"
grep -h 'off the forwarding path' "$work/stderr" | sort | uniq -c | sort -rn | head -n 3 || true

echo
for rate in 10000 50000 0; do
  "$target/release/examples/tap_rate" "$rate" "${RATE_SECONDS:-3}" "$bin"
done

echo
"$target/release/examples/tap_latency" "${LATENCY_MESSAGES:-5000}" "$bin"
