#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every libFuzzer target for SECONDS (default 30) each, from a seed
# corpus kept under build-fuzz/corpus/<target>, CDC_JOBS targets at once
# (default: the number of cores; each target is one process). For a long run:
#   scripts/build.sh fuzz && scripts/fuzz.sh 3600
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
jobs="${CDC_JOBS:-$(nproc)}"
run_one() {  # TARGET: runs it, prints its figures or its failure; fails with it
  local target=$1 name corpus
  name=$(basename "$target")
  corpus="build-fuzz/corpus/$name"
  mkdir -p "$corpus" "build-fuzz/artifacts/$name"
  if ! "$target" "$corpus" -max_total_time="$seconds" -max_len=300000 -rss_limit_mb=4096 \
       -artifact_prefix="build-fuzz/artifacts/$name/" -print_final_stats=1 2>"build-fuzz/$name.log"; then
    echo "-- $name (${seconds}s): FAILED" >&2
    tail -50 "build-fuzz/$name.log" >&2
    return 1
  fi
  echo "-- $name (${seconds}s): $(grep -E "stat::number_of_executed_units" "build-fuzz/$name.log" || true)"
}
status=0
pids=()
for target in build-fuzz/tests/fuzz/fuzz_*; do
  [[ -x "$target" ]] || continue
  if ((${#pids[@]} >= jobs)); then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
  run_one "$target" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
