#!/usr/bin/env bash
# `acp-ext watch` following a record that grows at RATE messages a second
# (default 10,000) for SECONDS (default 5), then idle for IDLE seconds
# (default 5): crates/acp-ext/examples/watch_follow.rs drives the release
# binary in a pseudo-terminal and prints the lag after the last write, the
# CPU while following, the redraw rate and the CPU while idle.
#
# The messages repeat one recorded `serve` session (probe → tap --record →
# serve, every script command).
#
# Usage: benches/watch-follow.sh [RATE] [SECONDS] [IDLE]
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release -q -p acp-ext --bin acp-ext --example watch_follow
bin="$target/release/acp-ext"
prompts=(hello /tool "/subagents 4" /compact "/goal set ship" "/title Bench" /limits)
args=()
for p in "${prompts[@]}"; do args+=(--prompt "$p"); done
"$bin" probe --quiet "${args[@]}" -- "$bin" tap --record "$work/one.jsonl" -- "$bin" serve >/dev/null
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
ACP_EXT="$bin" "$target/release/examples/watch_follow" "$work/one.jsonl" "${1:-10000}" "${2:-5}" "${3:-5}"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
