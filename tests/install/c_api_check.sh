#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the C API test program (c_consumer/c_api_test.c, built by the caller)
# on inputs made by the cdc tool, for several algorithms and profiles, and
# compares its chunks and BLAKE3 digests with `cdc chunk --csv`.
#   c_api_check.sh C_API_TEST CDC_TOOL
set -euo pipefail
prog="$1"; cdc="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$cdc" gen splitmix64:21:3000001 -o "$tmp/random.bin"
"$cdc" gen text:22:700000 -o "$tmp/text.bin"
"$cdc" gen empty -o "$tmp/empty.bin"
key=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
runs=0
check() {  # FILE ALGORITHM MIN AVG MAX [KEY|-] [level=N seed=N poly=HEX window=N ...]
  local file="$1" alg="$2" min="$3" avg="$4" max="$5" k="${6:--}"
  shift $(($# < 6 ? $# : 6))
  local args=(-a "$alg")
  [[ "$min" != 0 ]] && args+=(--min "$min")
  [[ "$avg" != 0 ]] && args+=(--avg "$avg")
  [[ "$max" != 0 ]] && args+=(--max "$max")
  [[ "$k" != - ]] && args+=(--key "$k")
  local p
  for p in "$@"; do args+=("--${p%%=*}" "${p#*=}"); done  # the C program's names are the tool's flags
  "$prog" "$file" "$alg" "$min" "$avg" "$max" "$k" "$@" > "$tmp/c.csv"
  "$cdc" chunk --csv --digest blake3 "${args[@]}" "$file" > "$tmp/tool.csv"
  if ! cmp -s "$tmp/c.csv" "$tmp/tool.csv"; then
    echo "c_api_check: $alg $min/$avg/$max ${k#-} $* on $(basename "$file"): the C API differs from cdc chunk" >&2
    diff "$tmp/c.csv" "$tmp/tool.csv" | head -5 >&2
    exit 1
  fi
  runs=$((runs + 1))
}
check "$tmp/random.bin" fastcdc-v1.0.0 0 0 0
check "$tmp/random.bin" fastcdc 0 16384 0
check "$tmp/random.bin" kfastcdc 0 0 0 "$key"
check "$tmp/random.bin" jc-v1.1.0 4096 16384 65536
check "$tmp/random.bin" ultracdc 0 0 0
check "$tmp/random.bin" fastcdc4stadia 0 0 0
check "$tmp/random.bin" fixed-v1.0.0 0 65536 0
check "$tmp/text.bin" fastcdc 0 0 0 "$key"
check "$tmp/text.bin" ultracdc-v1.0.0 0 0 0
check "$tmp/empty.bin" jc 0 0 0
# the names of other projects' chunkers, with their parameters
check "$tmp/random.bin" fastcdc-rs-v2020 0 0 0 - level=2 seed=1234567890123
check "$tmp/random.bin" fastcdc-rs-v2016 4096 16384 65536 - level=0
check "$tmp/text.bin" fastcdc-rs-ronomon 0 0 0
check "$tmp/random.bin" restic-rabin 32768 131072 524288 - poly=20E7F3380B43FD
check "$tmp/random.bin" restic-rabin 0 0 0
check "$tmp/random.bin" borg-buzhash 16384 65536 262144 - seed=42 window=2047
check "$tmp/text.bin" casync-buzhash 0 0 0
echo "c_api_check: $runs runs, the C API agrees with cdc chunk"
