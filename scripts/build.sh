#!/usr/bin/env bash
# Configures and builds one flavour of the project with CMake + Ninja.
#   scripts/build.sh [release|asan|tsan|fuzz|bench] [extra cmake args...]
# Build folders: build/ (release), build-asan/, build-tsan/, build-fuzz/, build-bench/.
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
shift || true
jobs="${CDC_JOBS:-$(nproc)}"
case "$flavour" in
  release) dir=build; args=(-DCMAKE_BUILD_TYPE=Release -DCDC_WERROR=ON -DCDC_TEST_OPTIMIZATION=-O1) ;;
  # -O1 -g1 (line tables: ASan's reports keep file:line) compiles the
  # template-heavy tools and tests about twice as fast as -O2 -g under the
  # sanitizers (82 -> 39 s for cmd_analyze.cpp): CI's ASan stage took 20 min.
  asan)    dir=build-asan; args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCDC_SANITIZE=ON -DCDC_WERROR=ON -DCDC_BUILD_PYTHON=ON
                                 -DCDC_TEST_OPTIMIZATION=-O0 -DCDC_PROGRAM_OPTIMIZATION=-O0
                                 "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
                                 "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG") ;;
  # (-O1 -g1 as under ASan: a short fuzz run needs a quick build more than
  # the last third of libFuzzer's executions per second)
  fuzz)    dir=build-fuzz; args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
                                 "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
                                 "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
                                 "-DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link,address,undefined"
                                 "-DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link,address,undefined"
                                 -DCDC_BUILD_FUZZ=ON -DCDC_BUILD_TESTS=OFF -DCDC_BUILD_TOOLS=OFF) ;;
  # ThreadSanitizer for the store's pipelines (scripts/test.sh builds and
  # runs store_test only: threads publish segments and files to each other;
  # the test's own code at -O0, as under ASan: the threads are the library's).
  tsan)    dir=build-tsan; args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCDC_WERROR=ON -DCDC_TEST_OPTIMIZATION=-O0
                                 "-DCMAKE_C_FLAGS=-fsanitize=thread" "-DCMAKE_CXX_FLAGS=-fsanitize=thread"
                                 "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread"
                                 "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
                                 "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG") ;;
  bench)   dir=build-bench; args=(-DCMAKE_BUILD_TYPE=Release -DCDC_BUILD_BENCH=ON -DCDC_BUILD_TESTS=OFF) ;;
  *) echo "usage: scripts/build.sh [release|asan|tsan|fuzz|bench] [cmake args...]" >&2; exit 2 ;;
esac
# ccache, where installed (a developer's machine; CI builds once, without it).
if command -v ccache >/dev/null 2>&1; then
  args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$dir" -G Ninja "${args[@]}" "$@" >/dev/null
# CDC_TARGETS (e.g. "cdc_tool") builds only those targets.
# shellcheck disable=SC2086
ninja -C "$dir" -j "$jobs" ${CDC_TARGETS:-}
