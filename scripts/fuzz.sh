#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every libFuzzer target for SECONDS (default 30) each, from a seed
# corpus kept under build-fuzz/corpus/<target>. For a long run:
#   scripts/build.sh fuzz && scripts/fuzz.sh 3600
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
status=0
for target in build-fuzz/tests/fuzz/fuzz_*; do
  [[ -x "$target" ]] || continue
  name=$(basename "$target")
  corpus="build-fuzz/corpus/$name"
  mkdir -p "$corpus" "build-fuzz/artifacts/$name"
  echo "-- $name (${seconds}s)"
  if ! "$target" "$corpus" -max_total_time="$seconds" -max_len=300000 -rss_limit_mb=4096 \
       -artifact_prefix="build-fuzz/artifacts/$name/" -print_final_stats=1 2>"build-fuzz/$name.log"; then
    tail -50 "build-fuzz/$name.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units" "build-fuzz/$name.log" || true
  fi
done
exit $status
