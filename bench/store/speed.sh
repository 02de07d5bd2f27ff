#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Re-put and get speed of cdc store against `cdc analyze`, for one or more
# cdc binaries side by side in one run (rounds interleaved, so load on a
# shared machine hits each binary alike). For each binary and round: a store
# is made, PATH put once, then put again unchanged under another name (re-put:
# hashed whole again) and under its name (re-put-same: compared with the
# stored version, whose digest is kept), restored to
# /dev/null (get) and to a file (get-file, compared; PATH a file only), and
# `cdc analyze` of PATH with the same algorithm and sizes. Prints the median wall and CPU
# seconds per step, MB/s, re-put / analyze ratios, and each binary's speed
# relative to the first one.
#
#   bench/store/speed.sh PATH "OPTS" CDC...     (PATH: a file or a tree) e.g.
#   bench/store/speed.sh /tmp/cdc-versions/day10.tar "--min 16K --avg 64K --max 256K" /tmp/cdc-main build/cdc
#
# ROUNDS (default 3) rounds; WORK (default /tmp/cdc-store-speed) holds the stores.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
file=$1
opts=$2
shift 2
rounds=${ROUNDS:-3}
work=${WORK:-/tmp/cdc-store-speed}
rm -rf "$work"
mkdir -p "$work"
bytes=$(du -sb "$file" | cut -f1)
# PATH is read again before every timed step: some VMs evict page cache
# continually (one here lost ~5 MB/s of it while idle, so a tree read
# minutes earlier was partly read from disk again by the step timed).
warm() {
  if [[ -d "$file" ]]; then find "$file" -type f -exec cat {} + > /dev/null; else cat "$file" > /dev/null; fi
}
warm
results="$work/results.txt"
: > "$results"

timed() {  # binary-index step command...: wall and user+sys CPU to the microsecond
  local b=$1 step=$2
  shift 2
  warm
  "$here/timed.py" - "$@" > "$work/time" 2> "$work/err" \
    || { echo "speed.sh: $step failed:" >&2; cat "$work/err" >&2; exit 1; }
  read -r wall cpu _ < "$work/time"
  echo "$b $step $wall $cpu" >> "$results"
}

for ((r = 0; r < rounds; r++)); do
  i=0
  for cdc in "$@"; do
    d="$work/store-$i"
    rm -rf "$d"
    # shellcheck disable=SC2086
    "$cdc" store init --no-encryption "$d" -a fastcdc $opts --zstd-level 3 > /dev/null
    timed "$i" put "$cdc" store put -q "$d" "$file" --name f
    timed "$i" reput "$cdc" store put -q "$d" "$file" --name g
    timed "$i" reput-same "$cdc" store put -q "$d" "$file" --name f
    if [[ -f "$file" ]]; then
      timed "$i" get sh -c "'$cdc' store get -q '$d' f -o - > /dev/null"
      timed "$i" get-file "$cdc" store get -q "$d" f -o "$work/out"
      cmp "$work/out" "$file"
      rm -f "$work/out"
    fi
    # shellcheck disable=SC2086
    timed "$i" analyze "$cdc" analyze -q -a fastcdc $opts "$file"
    i=$((i + 1))
  done
done

python3 - "$results" "$bytes" "$@" <<'PY'
import statistics, sys
path, nbytes, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rows = {}
for line in open(path):
    b, step, wall, cpu = line.split()
    rows.setdefault((int(b), step), []).append((float(wall), float(cpu)))
med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in rows.items()}
mb = nbytes / 1e6
print(f"{nbytes} bytes, {len(next(iter(rows.values())))} rounds, medians")
print("| binary | step | wall s | CPU s | MB/s wall | MB per CPU s |")
print("|---|---|---|---|---|---|")
for i, b in enumerate(bins):
    for step in ("put", "reput", "reput-same", "get", "get-file", "analyze"):
        if (i, step) not in med:
            continue
        w, c = med[(i, step)]
        print(f"| {b} | {step} | {w:.3f} | {c:.3f} | {mb / w:.0f} | {mb / c:.0f} |")
# analyze is the same code in every binary: its runs are pooled (more samples, less noise).
aw = statistics.median(w for (i, step), v in rows.items() if step == "analyze" for w, _ in v)
ac = statistics.median(c for (i, step), v in rows.items() if step == "analyze" for _, c in v)
print(f"- analyze (all binaries' runs): {aw:.3f} s wall, {ac:.3f} s CPU")
for i, b in enumerate(bins):
    rw, rc = med[(i, "reput")]
    print(f"- {b}: re-put (another name) speed / analyze speed = {aw / rw:.2f}x wall, {ac / rc:.2f}x by CPU")
    if (i, "reput-same") in med:
        rw, rc = med[(i, "reput-same")]
        print(f"- {b}: re-put (same name) speed / analyze speed = {aw / rw:.2f}x wall, {ac / rc:.2f}x by CPU")
if len(bins) > 1:
    for step in ("put", "reput", "reput-same", "get", "get-file"):
        if (0, step) not in med:
            continue
        base = med[(0, step)][0]
        print(f"- {step}: " + ", ".join(f"{b} {base / med[(i, step)][0]:.2f}x" for i, b in enumerate(bins)) + f" the speed of {bins[0]} (wall)")
PY
