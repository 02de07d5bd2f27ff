#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `cdc store put` with its packs in S3 against `restic backup`, both to one
# Ceph RGW started here (tests/engines/ceph.sh): a first snapshot of CORPUS,
# then a second of the same, unchanged tree; or, with VERSIONS=1, each
# dayNN.tar of CORPUS (bench/store/make_versions.py) in order, one snapshot
# a day, figures summed. For each: wall time, the S3 requests radosgw served
# (its "req done" log lines), the client's peak RSS (the largest of a run).
#   bench/engines/s3_put_vs_restic.sh CORPUS [WORK]     (CDC: the cdc to run)
# With VERSIONS=1, GET_ROUNDS=N times the last day's `cdc store get` N times
# (default 1), and VARIANTS="label=PATH ..." with each of these
# cdc-store-s3 programs too (other builds of the S3 pack storage),
# interleaved in each round.
# PG_DIR=DIR (a cluster of tests/engines/postgres.sh start DIR): the cdc
# store's catalog in a fresh database there instead of the local SQLite one.
# docs/BENCHMARKS.md ("Store: packs in S3") has its figures.
set -euo pipefail
corpus=$(realpath "$1")
work=$(realpath -m "${2:-$(mktemp -d /tmp/cdc-s3-bench-XXXXXX)}")
repo=$(cd "$(dirname "$0")/../.." && pwd)
cdc=${CDC:-$repo/build/cdc}
mkdir -p "$work"
# shellcheck source=bench/engines/with_ceph.sh
. "$repo/bench/engines/with_ceph.sh"
log=$ceph_dir/log/client.rgw.log
requests() { grep -c "req done" "$log" || true; }
mkbucket() { s3 PUT "$1" >/dev/null; }
bucket_bytes() {
  radosgw-admin -c "$CEPH_CONF" bucket stats --bucket="$1" |
    /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(v.get("size",0) for v in d.get("usage",{}).values()))'
}
if [[ ${VERSIONS:-0} == 1 ]]; then
  corpus_bytes=$(cat "$corpus"/day*.tar | wc -c)
  echo "corpus $corpus: $corpus_bytes bytes in $(ls "$corpus"/day*.tar | wc -l) daily tars"
else
  corpus_bytes=$(du -sb "$corpus" | cut -f1)
  echo "corpus $corpus: $corpus_bytes bytes, $(find "$corpus" -type f | wc -l) files"
fi
run() {  # LABEL BUCKET COMMAND...
  local label=$1 bucket=$2; shift 2
  local before after wall rss
  before=$(requests)
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >"$work/out" 2>"$work/err" || { cat "$work/err"; exit 1; }
  sleep 2  # (radosgw logs a request once it answered)
  after=$(requests)
  read -r wall rss <"$work/time"
  printf '%-22s wall %7.2f s  requests %6d  (%7.1f per GB of corpus)  peak RSS %6.1f MB  bucket %s bytes\n' \
    "$label" "$wall" $((after - before)) \
    "$(/usr/bin/python3 -c "print(($after - $before) / ($corpus_bytes / 1e9))")" \
    "$(/usr/bin/python3 -c "print($rss / 1024)")" "$(bucket_bytes "$bucket")"
}
mkbucket cdc-bench
mkbucket restic-bench
catalog=()
if [[ -n ${PG_DIR:-} ]]; then
  # shellcheck disable=SC1091
  . "$PG_DIR/env"
  export PGPASSWORD=$PG_PASSWORD
  db=cdc_s3_bench_$$
  /usr/lib/postgresql/15/bin/psql -h "$PG_SOCKET_DIR" -p "$PG_PORT" -U "$PG_USER" -d postgres -qAt \
    -c "CREATE DATABASE $db OWNER $PG_USER" >/dev/null
  catalog=(--catalog "postgresql://$PG_USER@$PG_HOST:$PG_PORT/$db")
  echo "catalog: PostgreSQL, database $db"
fi
"$cdc" store init --no-encryption -q "${catalog[@]}" --packs s3://cdc-bench/s --s3-endpoint "$CEPH_S3_ENDPOINT" \
  "$work/store"
export RESTIC_PASSWORD=bench
restic_repo=s3:$CEPH_S3_ENDPOINT/restic-bench
restic -q -r "$restic_repo" --cache-dir "$work/restic-cache" init >/dev/null
if [[ ${VERSIONS:-0} == 1 ]]; then
  days=("$corpus"/day*.tar)
  for tool in cdc restic; do
    wall=0 rss=0 before=$(requests)
    for d in "${days[@]}"; do
      if [[ $tool == cdc ]]; then
        /usr/bin/time -f "%e %M" -o "$work/time" "$cdc" store put -q "$work/store" "$d" --name "$(basename "$d")"
      else
        /usr/bin/time -f "%e %M" -o "$work/time" restic -q -r "$restic_repo" --cache-dir "$work/restic-cache" \
          backup "$d" >/dev/null
      fi
      read -r w r <"$work/time"
      wall=$(/usr/bin/python3 -c "print($wall + $w)")
      ((r > rss)) && rss=$r
    done
    sleep 2
    after=$(requests)
    bucket=$([[ $tool == cdc ]] && echo cdc-bench || echo restic-bench)
    printf '%-22s wall %7.2f s  requests %6d  (%7.1f per GB of corpus)  peak RSS %6.1f MB  bucket %s bytes\n' \
      "$tool (${#days[@]} days)" "$wall" $((after - before)) \
      "$(/usr/bin/python3 -c "print(($after - $before) / ($corpus_bytes / 1e9))")" \
      "$(/usr/bin/python3 -c "print($rss / 1024)")" "$(bucket_bytes "$bucket")"
  done
  last=${days[-1]}
  for ((r = 1; r <= ${GET_ROUNDS:-1}; r++)); do
    run "cdc get (last day)" cdc-bench "$cdc" store get -q "$work/store" "$(basename "$last")" -o "$work/last-cdc"
    cmp "$last" "$work/last-cdc"
    for v in ${VARIANTS:-}; do
      rm -f "$work/last-cdc"
      CDC_STORE_S3=${v#*=} run "  ${v%%=*}" cdc-bench "$cdc" store get -q "$work/store" "$(basename "$last")" \
        -o "$work/last-cdc"
      cmp "$last" "$work/last-cdc"
    done
    rm -f "$work/last-cdc"
  done
  run "restic restore (last)" restic-bench restic -q -r "$restic_repo" --cache-dir "$work/restic-cache" restore latest \
    --target "$work/restore-restic"
  run "cdc verify --full" cdc-bench "$cdc" store verify -q --full "$work/store"
  exit 0
fi
run "cdc put (first)" cdc-bench "$cdc" store put -q "$work/store" "$corpus" --name c
run "cdc put (unchanged)" cdc-bench "$cdc" store put -q "$work/store" "$corpus" --name c
run "restic backup (first)" restic-bench restic -q -r "$restic_repo" --cache-dir "$work/restic-cache" backup "$corpus"
run "restic backup (unch.)" restic-bench restic -q -r "$restic_repo" --cache-dir "$work/restic-cache" backup "$corpus"
run "cdc get" cdc-bench "$cdc" store get -q "$work/store" c -o "$work/restore-cdc"
run "restic restore" restic-bench restic -q -r "$restic_repo" --cache-dir "$work/restic-cache" restore latest --target "$work/restore-restic"
run "cdc verify --full" cdc-bench "$cdc" store verify -q --full "$work/store"
