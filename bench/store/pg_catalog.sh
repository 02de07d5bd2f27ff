#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# put/get with a PostgreSQL catalog vs SQLite (1 writer, the same 384 MiB
# tree), then 1/2/4 writers at once into one PostgreSQL-catalog store (each
# its own 96 MiB and a shared 48 MiB): aggregate throughput and the bytes
# stored twice because of the race (docs/BENCHMARKS.md).
#
#   tests/engines/postgres.sh start /tmp/pg      # a private cluster
#   bench/store/pg_catalog.sh /tmp/pg [build/cdc] [WORKDIR]
#   (PG_BENCH_WRITERS_ONLY=1: the N-writers part only)
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 PG_ENGINE_DIR [CDC] [WORKDIR]" >&2; exit 2; }
# shellcheck disable=SC1091
. "$1/env"
CDC=$(realpath "${2:-build/cdc}")
B=${3:-/tmp/cdc-pg-bench}
export PGPASSWORD=$PG_PASSWORD
rm -rf "$B"
mkdir -p "$B/data"
# one tree of 64 files x 6 MiB (384 MiB), half random, half text-like (compressible)
python3 - "$B/data" <<'PY'
import os, random
import sys
base = sys.argv[1]
for w in range(4):
    d = f"{base}/tree/w{w}"; os.makedirs(d, exist_ok=True)
for i in range(64):
    r = random.Random(i)
    blob = r.randbytes(3 << 20) + (" ".join(str(r.random()) for _ in range(170000))).encode()[: 3 << 20]
    open(f"{base}/tree/w{i % 4}/f{i:03}.bin", "wb").write(blob)
# a shared set every writer of the many-writers run puts too: 8 files x 6 MiB
os.makedirs(f"{base}/shared", exist_ok=True)
for i in range(8):
    r = random.Random(1000 + i)
    open(f"{base}/shared/s{i}.bin", "wb").write(r.randbytes(6 << 20))
for w in range(4):
    d = f"{base}/in{w}"; os.makedirs(d, exist_ok=True)
    for src in (f"{base}/tree/w{w}", f"{base}/shared"):
        for f in os.listdir(src): os.link(f"{src}/{f}", f"{d}/{f}")
PY
du -sh $B/data
mkdb() {
  /usr/lib/postgresql/15/bin/psql -h "$PG_SOCKET_DIR" -p "$PG_PORT" -U "$PG_USER" -d postgres -q \
    -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" 2>&1 | grep -v NOTICE || true
}
url() { echo "postgresql://$PG_USER@$PG_HOST:$PG_PORT/$1"; }

# PG_BENCH_WRITERS_ONLY=1: only the N-writers part.
kinds="sqlite pg"
[[ ${PG_BENCH_WRITERS_ONLY:-0} == 1 ]] && kinds=""
[[ -n $kinds ]] && echo "== 1 writer: SQLite vs PostgreSQL, the whole tree (4 dirs)"
for kind in $kinds; do
  for rep in 1 2; do
    rm -rf $B/s-$kind $B/out-$kind
    if [[ $kind == pg ]]; then mkdb bench1; $CDC store init -q --no-encryption --catalog "$(url bench1)" $B/s-$kind; else $CDC store init -q --no-encryption $B/s-$kind; fi
    sync
    s=$(date +%s.%N); $CDC store put -q $B/s-$kind $B/data/tree --name t; e=$(date +%s.%N)
    put=$(python3 -c "print(round($e-$s,2))")
    s=$(date +%s.%N); $CDC store get -q $B/s-$kind t -o $B/out-$kind; e=$(date +%s.%N)
    get=$(python3 -c "print(round($e-$s,2))")
    s=$(date +%s.%N); $CDC store put -q $B/s-$kind $B/data/tree --name u; e=$(date +%s.%N)
    again=$(python3 -c "print(round($e-$s,2))")
    echo "$kind rep $rep: put ${put}s get ${get}s put-again ${again}s"
    diff -r $B/data/tree $B/out-$kind >/dev/null && echo "  restored identical" || echo "  DIFFERENT"
  done
done

echo "== N writers at once into one PG-catalog store (each: its own 96 MiB + the shared 48 MiB)"
for n in 1 2 4; do
  mkdb benchn; rm -rf $B/s-n; $CDC store init -q --no-encryption --catalog "$(url benchn)" $B/s-n
  s=$(date +%s.%N)
  pids=()
  for ((w=0; w<n; w++)); do
    $CDC store put --json $B/s-n $B/data/in$w --name "w$w" > $B/put-$w.json & pids+=($!)
  done
  for p in "${pids[@]}"; do wait $p; done
  e=$(date +%s.%N)
  python3 - "$n" "$s" "$e" "$B" <<'PY'
import json, sys
n, s, e = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
read = new = raced = 0
for w in range(n):
    j = json.load(open(f"{sys.argv[4]}/put-{w}.json"))
    read += j["bytes"]; new += j["new_bytes"]; raced += j["raced_bytes"]
print(f"{n} writer(s): {read/1e6:.0f} MB read in {e-s:.2f} s = {read/1e6/(e-s):.0f} MB/s aggregate; new {new/1e6:.1f} MB; "
      f"stored twice because of the race: {raced/1e6:.2f} MB ({100*raced/max(new,1):.2f}% of new bytes)")
PY
  $CDC store verify --full -q $B/s-n && echo "  verify --full: ok"
done
