#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Re-put speed in a store that holds many snapshots of a tree (a backup
# store: one prefix per day), against `cdc analyze`, for one or more cdc
# binaries side by side. For each binary a store is made and PATH put
# VERSIONS times under v1/, v2/, ...; then, rounds interleaved, PATH is put
# once more under a new prefix into each binary's store, and analyzed.
# Prints median wall and CPU seconds and the re-put / analyze ratio.
#
#   bench/store/many_versions.sh PATH VERSIONS "OPTS" CDC...   e.g.
#   bench/store/many_versions.sh /tmp/cdc-store-bench/corpus-sample 100 "--min 2K --avg 8K --max 64K" /tmp/cdc-old build/cdc
#
# ROUNDS (default 7) rounds; WORK (default /tmp/cdc-store-versions) holds the stores.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
path=$1
versions=$2
opts=$3
shift 3
rounds=${ROUNDS:-7}
work=${WORK:-/tmp/cdc-store-versions}
rm -rf "$work"
mkdir -p "$work"
results="$work/results.txt"
: > "$results"
bins=("$@")
for ((b = 0; b < ${#bins[@]}; b++)); do
  # shellcheck disable=SC2086
  "${bins[b]}" store init --no-encryption "$work/s$b" $opts > /dev/null
  for ((v = 1; v <= versions; v++)); do
    "${bins[b]}" store put "$work/s$b" "$path" --name "v$v" -q > /dev/null
  done
  echo "binary $b: $versions versions stored" >&2
done
for ((r = 0; r < rounds; r++)); do
  for ((b = 0; b < ${#bins[@]}; b++)); do
    read -r wall cpu _ < <("$here/timed.py" - "${bins[b]}" store put "$work/s$b" "$path" --name "new$r" -q)
    echo "$b reput $wall $cpu" >> "$results"
  done
  # shellcheck disable=SC2086
  read -r wall cpu _ < <("$here/timed.py" - "${bins[0]}" analyze "$path" $opts -q)
  echo "a analyze $wall $cpu" >> "$results"
done
python3 - "$results" "${bins[@]}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
bins = sys.argv[2:]
med = lambda k, i: statistics.median(float(r[i]) for r in rows if r[0] == k)
aw, ac = med("a", 2), med("a", 3)
print(f"| binary | re-put wall s | CPU s | / analyze wall | / analyze CPU |")
print("|---|---|---|---|---|")
for b, name in enumerate(bins):
    w, c = med(str(b), 2), med(str(b), 3)
    print(f"| {name} | {w:.3f} | {c:.3f} | {aw / w:.2f}x | {ac / c:.2f}x |")
print(f"| analyze | {aw:.3f} | {ac:.3f} | | |")
PY
