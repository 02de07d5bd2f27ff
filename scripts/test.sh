#!/usr/bin/env bash
# The whole test suite: installs what is missing; builds with warnings as
# errors; runs every test; runs them again under ASan + UBSan; builds the
# libFuzzer targets with clang and runs each for a short bounded time.
#   CDC_FUZZ_SECONDS (default 30) bounds each fuzz run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs="${CDC_JOBS:-$(nproc)}"

echo "== release build + tests"
scripts/build.sh release
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== ASan + UBSan build + tests"
scripts/build.sh asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"

echo "== fuzz (libFuzzer, ${CDC_FUZZ_SECONDS:-30}s per target)"
scripts/build.sh fuzz
scripts/fuzz.sh "${CDC_FUZZ_SECONDS:-30}"
echo "== all tests passed"
