#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cdc store against BorgBackup (borg create), restic (restic backup) and
# casync (casync make), side by side in one run, with comparable chunk sizes
# (~64 KiB average; restic's chunker is fixed at ~1 MiB) and zstd level 3
# everywhere (restic: --compression auto, its zstd default), no encryption
# where a tool allows it (restic always encrypts).
#
#   bench/store/run.sh [VERSIONS_DIR] [WORK_DIR]     (CORPORA="versions sample" by default)
#
# VERSIONS_DIR: the tars of bench/store/make_versions.py (default
# /tmp/cdc-versions, made if missing: 10 days, ~3.5 GB). WORK_DIR (default
# /tmp/cdc-store-bench) holds the repositories; the page cache is warmed
# first. Each tool stores every version in order (one backup per day), then
# stores the last day again (unchanged data), then restores it; each step is
# timed by bench/store/timed.py (wall, user+sys CPU, peak RSS, from wait4). The same on the
# sample corpus (cdc sample: a tree of 312 files). Prints a markdown table
# per corpus; docs/BENCHMARKS.md has the figures and what bounds them.
set -euo pipefail
cd "$(dirname "$0")/../.."
versions="${1:-/tmp/cdc-versions}"
work="${2:-/tmp/cdc-store-bench}"
cdc="$(realpath "${CDC:-build/cdc}")"
[[ -x "$cdc" ]] || { echo "run.sh: no cdc at $cdc (scripts/build.sh release)" >&2; exit 2; }
scripts/install-deps.sh --peers
python3 bench/store/make_versions.py "$versions" 10 300 1
rm -rf "$work"
mkdir -p "$work"
"$cdc" sample -q "$work/corpus-sample"
export BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK=yes BORG_RELOCATED_REPO_ACCESS_IS_OK=yes
export BORG_BASE_DIR="$work/borg-home" RESTIC_PASSWORD=bench XDG_CACHE_HOME="$work/cache"
results="$work/results.jsonl"
: > "$results"

# run TOOL CORPUS STEP BYTES -- command...: times one command, appends a JSON line.
run() {
  local tool=$1 corpus=$2 step=$3 bytes=$4
  shift 5
  bench/store/timed.py "$work/out" "$@" > "$work/time" 2> "$work/err" \
    || { echo "run.sh: $tool $step failed:" >&2; cat "$work/err" >&2; exit 1; }
  read -r wall cpu rss < "$work/time"
  printf '{"tool":"%s","corpus":"%s","step":"%s","bytes":%s,"wall":%s,"cpu":%s,"rss_kb":%s}\n' \
    "$tool" "$corpus" "$step" "$bytes" "$wall" "$cpu" "$rss" >> "$results"
}
size_of() { du -sb "$1" | cut -f1; }
record_size() {  # tool corpus bytes
  printf '{"tool":"%s","corpus":"%s","step":"size","bytes":%s}\n' "$1" "$2" "$3" >> "$results"
}

days=("$versions"/day*.tar)
last="${days[-1]}"
cat "${days[@]}" > /dev/null
find "$work/corpus-sample" -type f -exec cat {} + > /dev/null

bench_corpus() {  # corpus-name, then the inputs: the day tars or the sample tree
  local corpus=$1
  shift
  local inputs=("$@") total=0
  for f in "${inputs[@]}"; do total=$((total + $(size_of "$f"))); done
  local lastin="${inputs[-1]}" lastsize
  lastsize=$(size_of "$lastin")
  local d="$work/repos/$corpus"
  mkdir -p "$d"

  # cdc store, the comparable sizes (fastcdc 16K/64K/256K) and its defaults (8K average).
  for variant in "cdc-64k:--min 16K --avg 64K --max 256K" "cdc-8k:"; do
    local name=${variant%%:*} opts=${variant#*:}
    # shellcheck disable=SC2086
    "$cdc" store init --no-encryption "$d/$name" -a fastcdc $opts --zstd-level 3 > /dev/null
    local t0=$(date +%s.%N)
    for f in "${inputs[@]}"; do run "$name" "$corpus" put "$(size_of "$f")" -- "$cdc" store put -q "$d/$name" "$f" --name "$(basename "$f")"; done
    run "$name" "$corpus" reput "$lastsize" -- "$cdc" store put -q "$d/$name" "$lastin" --name again
    if [[ -f "$lastin" ]]; then
      run "$name" "$corpus" get "$lastsize" -- "$cdc" store get -q "$d/$name" "$(basename "$lastin")" -o "$d/restored"
      cmp "$d/restored" "$lastin"
      run "$name" "$corpus" get-devnull "$lastsize" -- sh -c "'$cdc' store get -q '$d/$name' '$(basename "$lastin")' -o - > /dev/null"
      rm -f "$d/restored"
    fi
    # shellcheck disable=SC2046
    "$cdc" store rm "$d/$name" $("$cdc" store ls "$d/$name" again | awk '{ print $NF }') > /dev/null
    record_size "$name" "$corpus" "$(size_of "$d/$name")"
    "$cdc" store stats --json "$d/$name" > "$d/$name.stats.json"
    # analyze of the same input with the same algorithm (the re-put target).
    # shellcheck disable=SC2086
    run "$name" "$corpus" analyze "$lastsize" -- "$cdc" analyze -q -a fastcdc $opts "$lastin"
  done

  # borg: 64 KiB average (2^16 mask), 16 KiB..256 KiB, zstd 3, no encryption.
  borg init --encryption=none "$d/borg"
  for f in "${inputs[@]}"; do
    run borg "$corpus" put "$(size_of "$f")" -- borg create --chunker-params buzhash,14,18,16,4095 -C zstd,3 "$d/borg::$(basename "$f")" "$f"
  done
  run borg "$corpus" reput "$lastsize" -- borg create --chunker-params buzhash,14,18,16,4095 -C zstd,3 "$d/borg::again" "$lastin"
  borg delete "$d/borg::again"
  borg compact "$d/borg"
  if [[ -f "$lastin" ]]; then
    mkdir -p "$d/borg-out"
    run borg "$corpus" get "$lastsize" -- sh -c "cd '$d/borg-out' && borg extract '$d/borg::$(basename "$lastin")'"
    cmp "$d/borg-out$lastin" "$lastin"
    rm -rf "$d/borg-out"
  fi
  record_size borg "$corpus" "$(size_of "$d/borg")"

  # restic: its own chunker (512 KiB..8 MiB, ~1 MiB), zstd auto, encrypted.
  restic init -q --repository-version 2 -r "$d/restic"
  for f in "${inputs[@]}"; do
    run restic "$corpus" put "$(size_of "$f")" -- restic -q -r "$d/restic" backup --compression auto "$f"
  done
  run restic "$corpus" reput "$lastsize" -- restic -q -r "$d/restic" backup --compression auto "$lastin"
  if [[ -f "$lastin" ]]; then
    run restic "$corpus" get "$lastsize" -- restic -q -r "$d/restic" restore latest --target "$d/restic-out"
    cmp "$d/restic-out$lastin" "$lastin"
    rm -rf "$d/restic-out"
  fi
  record_size restic "$corpus" "$(size_of "$d/restic")"

  # casync: 16K:64K:256K, zstd, one index per version in the store's directory.
  mkdir -p "$d/casync"
  local k=0
  for f in "${inputs[@]}"; do
    k=$((k + 1))
    if [[ -d "$f" ]]; then idx="$d/casync/v$k.caidx"; else idx="$d/casync/v$k.caibx"; fi
    run casync "$corpus" put "$(size_of "$f")" -- casync make --store="$d/casync/store" --chunk-size=16384:65536:262144 --compression=zstd "$idx" "$f"
  done
  if [[ -d "$lastin" ]]; then idx="$d/casync/again.caidx"; else idx="$d/casync/again.caibx"; fi
  run casync "$corpus" reput "$lastsize" -- casync make --store="$d/casync/store" --chunk-size=16384:65536:262144 --compression=zstd "$idx" "$lastin"
  rm -f "$idx"
  if [[ -f "$lastin" ]]; then
    run casync "$corpus" get "$lastsize" -- casync extract --store="$d/casync/store" "$d/casync/v$k.caibx" "$d/casync-out"
    cmp "$d/casync-out" "$lastin"
    rm -f "$d/casync-out"
  fi
  record_size casync "$corpus" "$(size_of "$d/casync")"
  echo "run.sh: $corpus done ($total bytes)" >&2
}

for corpus in ${CORPORA:-versions sample}; do
  case "$corpus" in
    versions) bench_corpus versions "${days[@]}" ;;
    sample) bench_corpus sample "$work/corpus-sample" ;;
  esac
done
python3 bench/store/table.py "$results"
