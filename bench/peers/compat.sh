#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Each compatibility name beside its origin, in one run on the same bytes
# (SplitMix64 seed 1, the bytes `cdc speed --data random` cuts):
#   restic-rabin   vs restic's chunker (Go; bench/peers/restic/main.go)
#   borg-buzhash   vs borg 1.2's chunker (its C extension from python3;
#                     bench/peers/borg_chunker.py)
#   casync-buzhash vs `casync make` of the file (chunking + SHA-256 + zstd +
#                     chunk store: casync has no cut-only mode), beside
#                     `cdc chunk --digest sha256` of the same file and our
#                     cut alone
# each at the origin's default profile and at 2K/8K/64K (casync: its
# defaults 16K/64K/256K). restic and borg time their chunking loop over the
# data in memory, as `cdc speed` does; every figure is CPU time.
#   bench/peers/compat.sh [SIZE_MIB]    (default 512; CDC=path/to/cdc, default build/cdc)
set -euo pipefail
cd "$(dirname "$0")/../.."
size_mib="${1:-512}"
source bench/peers/common.sh
peers_setup compat.sh
data="$work/random.bin"
"$cdc" gen "splitmix64:1:$((size_mib * 1048576))" -o "$data"
build_restic_peer

speed() {  # NAME LABEL FLAGS...: one JSON line from cdc speed
  local name="$1" label="$2"
  shift 2
  "$cdc" speed --json --size "${size_mib}MiB" -a "$name" "$@" | python3 -c '
import json, sys
d = json.load(sys.stdin)
r = d["results"][0]
print(json.dumps({"row": sys.argv[1], "impl": "cdc " + r["algorithm"] + " (" + r["kernel"] + ")", "mb_s": r["mb_s"], "chunks": r["chunks"]}))' "$label"
}
peer() {  # LABEL IMPL COMMAND...: the JSON line a peer prints, relabelled
  local label="$1" impl="$2"
  shift 2
  "$@" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
print(json.dumps({"row": sys.argv[1], "impl": sys.argv[2], "mb_s": r["mb_s"], "chunks": r["chunks"]}))' "$label" "$impl"
}
timed() {  # LABEL IMPL COMMAND...: CPU time of a whole command over the file
  local label="$1" impl="$2"
  shift 2
  python3 - "$data" "$label" "$impl" "$@" <<'PY'
import json, os, resource, subprocess, sys
path, label, impl, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"row": label, "impl": impl, "mb_s": os.path.getsize(path) / 1e6 / (ru.ru_utime + ru.ru_stime)}))
PY
}

results="$work/results.jsonl"
{
  r="restic 512K/1M/8M"
  speed restic-rabin "$r"
  speed restic-rabin "$r" --kernel scalar
  peer "$r" "restic chunker 0.4.0 (Go)" "$work/restic-chunker" "$data" 524288 8388608 20
  r="restic 2K/8K/64K"
  speed restic-rabin "$r" --min 2K --avg 8K --max 64K
  peer "$r" "restic chunker 0.4.0 (Go)" "$work/restic-chunker" "$data" 2048 65536 13
  r="borg 512K/2M/8M w4095"
  speed borg-buzhash "$r"
  speed borg-buzhash "$r" --kernel scalar
  peer "$r" "borg 1.2.4 (C from python3)" /usr/bin/python3 bench/peers/borg_chunker.py "$data" 19 23 21 4095
  r="borg 2K/8K/64K w4095"
  speed borg-buzhash "$r" --min 2K --avg 8K --max 64K
  peer "$r" "borg 1.2.4 (C from python3)" /usr/bin/python3 bench/peers/borg_chunker.py "$data" 11 16 13 4095
  r="casync 16K/64K/256K"
  speed casync-buzhash "$r"
  speed casync-buzhash "$r" --kernel scalar
  cat "$data" >/dev/null
  timed "$r" "cdc chunk --digest sha256 (file, end to end)" \
    "$cdc" chunk -a casync-buzhash --digest sha256 --csv "$data"
  timed "$r" "casync make --compression=zstd (file, end to end)" \
    casync --store="$work/store.castr" --compression=zstd make "$work/out.caibx" "$data"
} > "$results"

python3 - "$results" "$size_mib" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"{sys.argv[2]} MiB of random bytes (SplitMix64 seed 1); CPU time; MB = 10^6 bytes")
print(f"| profile | implementation | MB/s | chunks | ours / origin |")
print(f"|---|---|---:|---:|---:|")
for row in dict.fromkeys(r["row"] for r in rows):
    group = [r for r in rows if r["row"] == row]
    origin = next((r for r in group if not r["impl"].startswith("cdc ")), None)
    for r in group:
        ratio = f"{r['mb_s'] / origin['mb_s']:.2f}x" if origin and r is not origin else "1.00x" if r is origin else "-"
        print(f"| {row} | {r['impl']} | {r['mb_s']:.0f} | {r.get('chunks', '-')} | {ratio} |")
PY
