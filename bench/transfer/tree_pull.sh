#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A whole snapshot out of a store: `cdc pull --from ADDR latest -o OUT` (one
# PullTree stream from a `cdc serve` on loopback) against `cdc store get DIR
# latest -o OUT` of the same snapshot, one process each side, in alternating
# runs (docs/BENCHMARKS.md, "A snapshot over the wire").
#
#   bench/transfer/tree_pull.sh [TREE] [RUNS] [OUT_PARENT]
#
# TREE (default /usr/share/doc) is backed up once into a fresh store under
# $WORK (default /tmp/cdc-tree-pull-bench); OUT (removed before each run)
# lies in OUT_PARENT (default /dev/shm: a tmpfs, so that the disk's
# writeback does not decide the wall times; pass a directory on disk to see
# it). Prints one line per run (wall s, client user + system s, server CPU s
# from /proc/PID/stat) and the medians.
set -euo pipefail
TREE=${1:-/usr/share/doc}
RUNS=${2:-5}
OUT_PARENT=${3:-/dev/shm}
CDC=${CDC:-$(dirname "$0")/../../build/cdc}
WORK=${WORK:-/tmp/cdc-tree-pull-bench}
rm -rf "$WORK"
mkdir -p "$WORK"
export XDG_CONFIG_HOME=$WORK/config
"$CDC" store init --no-encryption "$WORK/store" -q
"$CDC" store backup "$WORK/store" "$TREE" -q >/dev/null
"$CDC" serve --store "$WORK/store" --listen 127.0.0.1:0 --port-file "$WORK/port" -q 2>"$WORK/serve.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$OUT"' EXIT
for _ in $(seq 200); do [ -s "$WORK/port" ] && break; sleep 0.05; done
ADDR=127.0.0.1:$(cat "$WORK/port")
OUT=$OUT_PARENT/cdc-tree-pull-bench-out
cpu() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$1/stat"; }
run() {  # name command...: one line "name wall cpu server"
    local name=$1 s0 s1
    shift
    rm -rf "$OUT"
    s0=$(cpu $SERVER)
    /usr/bin/time -f "%e %U %S" -o "$WORK/time" "$@" >/dev/null
    s1=$(cpu $SERVER)
    read -r wall user sys <"$WORK/time"
    echo "$name $wall $(echo "$user + $sys" | bc) $(echo "$s1 - $s0" | bc)"
}
for _ in $(seq "$RUNS"); do
    run get "$CDC" store get "$WORK/store" latest -o "$OUT" -q
    run pull "$CDC" pull --from "$ADDR" latest -o "$OUT" -q
done | tee "$WORK/runs"
python3 - "$WORK/runs" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {k: [statistics.median(float(r[i]) for r in rows if r[0] == k) for i in (1, 2, 3)] for k in ("get", "pull")}
for k, (w, c, s) in med.items():
    print(f"median {k}: wall {w:.2f} s, client CPU {c:.2f} s, server CPU {s:.2f} s")
print(f"pull / get speed (wall medians): {med['get'][0] / med['pull'][0]:.2f}x")
PY
