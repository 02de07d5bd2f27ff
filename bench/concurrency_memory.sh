#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The "Concurrency and memory" table of docs/BENCHMARKS.md: cdc bench run over
# a generated tree at concurrency 1, 100, 1000 and max chunk size 64 KiB and
# 1 MiB, unpooled vs pooled; JSON runs and graphs under OUT.
#
#   bench/make_tree.sh /tmp/cdc-tree 20000
#   bench/concurrency_memory.sh path/to/cdc /tmp/cdc-tree /tmp/cdc-bench
set -euo pipefail
cdc=${1:?usage: concurrency_memory.sh CDC TREE OUT}
tree=${2:?usage: concurrency_memory.sh CDC TREE OUT}
out=${3:?usage: concurrency_memory.sh CDC TREE OUT}
mkdir -p "$out"
cat "$tree"/*/* >/dev/null  # warm the page cache: measure chunking, not the disk
for max in 64K 1M; do
  for c in 1 100 1000; do
    for mode in unpooled pooled; do
      flag=""; [[ $mode == pooled ]] && flag="--pooled"
      "$cdc" bench run -a fastcdc --max "$max" -c "$c" $flag --json "$tree" >"$out/run-$max-c$c-$mode.json"
    done
  done
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
print("| max | concurrency | mode | peak RSS (MB) | buffer allocations | allocated (MB) | elapsed (s) | MB/s | CPU user+sys (s) |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
for mx in ("64K", "1M"):
    for c in (1, 100, 1000):
        for mode in ("unpooled", "pooled"):
            s = json.load(open(f"{out}/run-{mx}-c{c}-{mode}.json"))["summary"]
            print(f"| {mx} | {c} | {mode} | {s['peak_rss_mb']:.1f} | {s['buffer_allocations']} | "
                  f"{s['buffer_allocated_mb']:.0f} | {s['elapsed_s']:.2f} | {s['mb_per_s']:.0f} | "
                  f"{s['cpu_user_s'] + s['cpu_sys_s']:.2f} |")
PY
