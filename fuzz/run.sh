#!/usr/bin/env bash
# Runs every fuzz target (or those named) one after another, one job each.
#
#   fuzz/run.sh [SECONDS]            each target for SECONDS (default 60)
#   RUNS=10000000 fuzz/run.sh        each target for a fixed count of inputs
#   TARGETS="validate check" fuzz/run.sh 30
#
# Needs a nightly toolchain and cargo-fuzz. Builds without sanitizer and
# with debug assertions (the crates forbid unsafe code). Seeds the corpora
# first when fuzz/corpus/ is missing (fuzz/seed.sh). Logs go to
# fuzz/logs/<target>.log; the last stats line of each is printed, and the
# script fails if a target found a crash (kept in fuzz/artifacts/<target>/).
#
# `tap_framing` is built without comparison tracing (in its own target
# directory): its inputs are cut points and chunk sizes around JSON lines,
# and tracing every comparison of the JSON parsing it drives made it 3.4x
# slower for the same coverage.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
seconds="${1:-60}"
targets="${TARGETS:-validate dispatch check tap_framing usage_fold state watch bridge}"
flags=(--sanitizer none --debug-assertions)

[[ -d corpus ]] || ./seed.sh
# Extra build flags of one target.
extra() {
  case "$1" in
    tap_framing) echo --no-trace-compares --target-dir target/no-trace-compares ;;
  esac
}

for t in $targets; do
  # shellcheck disable=SC2046
  cargo +nightly fuzz build "${flags[@]}" $(extra "$t") "$t" || exit 2
done
mkdir -p logs
failed=0
for t in $targets; do
  mkdir -p "corpus/$t"
  if [[ -n "${RUNS:-}" ]]; then limit=(-runs="$RUNS"); else limit=(-max_total_time="$seconds"); fi
  start=$(date +%s)
  # shellcheck disable=SC2046
  cargo +nightly fuzz run "${flags[@]}" $(extra "$t") "$t" "corpus/$t" -- \
    "${limit[@]}" -print_final_stats=1 -max_len=4096 >"logs/$t.log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$' | tail -1)
  speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$' | tail -1)
  echo "$t: exit $rc, ${runs:-?} inputs in ${took}s (${speed:-?} exec/s), corpus $(ls "corpus/$t" | wc -l) files"
  [[ $rc -eq 0 ]] || failed=1
done
exit $failed
