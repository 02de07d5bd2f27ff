#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole test suite: installs what is missing; builds with warnings as
# errors; runs every test; runs the engine tests (label `engines`: the S3
# pack storage against a one-node Ceph RGW, the PostgreSQL catalog against
# a private cluster, both started by the tests); runs the tests
# again under ASan + UBSan (the engines aside); runs the store's tests and
# those of its S3 reads under TSan; builds the libFuzzer targets with clang
# and runs each for a short bounded time (CDC_JOBS of them at once).
#   CDC_FUZZ_SECONDS (default 20) bounds each fuzz run. Each stage prints its
# time, so that CI's budget (45 minutes on 2 cores; docs/DEVELOPING.md has the
# stages' times) can be watched.
set -euo pipefail
cd "$(dirname "$0")/.."
stage_start=$SECONDS
stage_end() { echo "-- $1: $((SECONDS - stage_start)) s (total $SECONDS s)"; stage_start=$SECONDS; }
scripts/install-deps.sh
jobs="${CDC_JOBS:-$(nproc)}"
stage_end "install"

echo "== release build + tests"
scripts/build.sh release
ctest --test-dir build --output-on-failure -j "$jobs" -LE engines
stage_end "release build + tests"

echo "== engines: S3 packs against Ceph RGW (one node), a PostgreSQL catalog against a private cluster (started by the tests)"
ctest --test-dir build --output-on-failure -L engines
stage_end "engines"

echo "== ASan + UBSan build + tests"
scripts/build.sh asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp" ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE engines
stage_end "ASan + UBSan build + tests"

echo "== TSan: the store's pipelines (store_test), its S3 reads (s3_client_test: readers and the fetching thread)"
CDC_TARGETS="tests/store_test tests/s3_client_test" scripts/build.sh tsan
# (TSan of g++ 12 cannot start under the high mmap randomisation of some
# kernels, "unexpected memory mapping": then it runs with ASLR off)
for t in store_test s3_client_test; do
  if ! TSAN_OPTIONS=halt_on_error=1 "build-tsan/tests/$t" --gtest_brief=1 2> "build-tsan/$t.err"; then
    cat "build-tsan/$t.err" >&2
    grep -q "unexpected memory mapping" "build-tsan/$t.err" || exit 1
    TSAN_OPTIONS=halt_on_error=1 setarch "$(uname -m)" -R "build-tsan/tests/$t" --gtest_brief=1
  fi
done
stage_end "TSan build + store and S3 read tests"

echo "== fuzz (libFuzzer, ${CDC_FUZZ_SECONDS:-20}s per target)"
CDC_TARGETS=fuzz_targets scripts/build.sh fuzz
scripts/fuzz.sh "${CDC_FUZZ_SECONDS:-20}"
stage_end "fuzz build + runs"
echo "== all tests passed"
