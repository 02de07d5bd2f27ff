#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Peers side by side, in one run on the same bytes: our kernels (cdc speed),
# restic's Rabin chunker (Go, Debian's golang-github-restic-chunker-dev built
# with Debian's golang-go), borg's buzhash chunker (Debian's borgbackup via
# python3), and the hashers b3sum (one thread) and xxhsum (XXH3) for scale.
#   bench/peers/run.sh [SIZE_MIB]        (default 1024; needs a built cdc:
#                                         CDC=path/to/cdc, default build/cdc)
# Chunkers run at 2 KiB / 8 KiB / 64 KiB; each peer chunks the whole buffer in
# memory and times its chunking loop only; the hashers are timed end to end
# over the page-cached file. Every figure is CPU time (user + system) of the
# measuring process, so that other load on a shared machine does not count. Prints a table with each figure's ratio to our
# fastcdc (auto kernel). MB = 10^6 bytes.
set -euo pipefail
cd "$(dirname "$0")/../.."
size_mib="${1:-1024}"
source bench/peers/common.sh
peers_setup run.sh
data="$work/random.bin"
# The same bytes as `cdc speed --data random` (SplitMix64, seed 1).
"$cdc" gen "splitmix64:1:$((size_mib * 1048576))" -o "$data"
build_restic_peer

now() { date +%s.%N; }
results="$work/results.jsonl"
{
  "$cdc" speed --json --size "${size_mib}MiB" -a all \
    | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({"peer":"memory-read","mb_s":d["baseline_mb_s"]}))
for r in d["results"]: print(json.dumps({"peer":"cdc "+r["algorithm"]+" ("+r["kernel"]+")","mb_s":r["mb_s"],"chunks":r["chunks"]}))'
  "$cdc" speed --json --kernel scalar --size "${size_mib}MiB" -a fastcdc,jc-v1.1.0,ultracdc,fastcdc4stadia \
    | python3 -c 'import json,sys; d=json.load(sys.stdin)
for r in d["results"]: print(json.dumps({"peer":"cdc "+r["algorithm"]+" (scalar)","mb_s":r["mb_s"],"chunks":r["chunks"]}))'
  "$work/restic-chunker" "$data" 2048 65536 13
  /usr/bin/python3 bench/peers/borg_chunker.py "$data" 11 16 13 4095
  cat "$data" > /dev/null
  for hasher in "b3sum --num-threads 1" "xxhsum -H3"; do
    python3 - "$data" $hasher <<'PY'
import json, os, resource, subprocess, sys
path, cmd = sys.argv[1], sys.argv[2:]
subprocess.run(cmd + [path], check=True, stdout=subprocess.DEVNULL)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"peer": " ".join(cmd) + " (file)", "mb_s": os.path.getsize(path) / 1e6 / (ru.ru_utime + ru.ru_stime)}))
PY
  done
} > "$results"

python3 - "$results" "$size_mib" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ours = next(r["mb_s"] for r in rows if r["peer"].startswith("cdc fastcdc ("))
print(f"{sys.argv[2]} MiB of random bytes, in memory, 2K/8K/64K; MB = 10^6 bytes")
print(f"{'implementation':<42} {'MB/s':>9} {'chunks':>9} {'cdc fastcdc / this':>19}")
for r in rows:
    print(f"{r['peer']:<42} {r['mb_s']:>9.0f} {str(r.get('chunks', '-')):>9} {ours / r['mb_s']:>18.2f}x")
PY
