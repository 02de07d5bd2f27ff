#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# restic vs cdc on the same Ceph RGW (docs/BENCHMARKS.md): a put of each
# daily state (bench/store/make_versions.py tars) into a restic repository
# and into an encrypted cdc store with S3 packs, then a restore of the last
# one; wall time and peak RSS (/usr/bin/time), S3 requests and bytes counted
# by one counting proxy per tool (bench/store/s3_count_proxy.py).
#
#   tests/engines/ceph.sh start /tmp/ceph
#   bench/store/make_versions.py /tmp/versions 5 100
#   bench/store/restic_rgw.sh /tmp/ceph /tmp/versions [build/cdc] [WORKDIR]
# (CDC_TEST_FAST_KDF=1 in the environment: the cdc store's key slot with
# the weakest Argon2id parameters, to see the working set without its
# 256 MiB; restic keeps its own scrypt parameters.)
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 CEPH_DIR VERSIONS_DIR [CDC] [WORKDIR]" >&2; exit 2; }
# shellcheck disable=SC1091
. "$1/env"
V=$2
CDC=$(realpath "${3:-build/cdc}")
W=${4:-/tmp/cdc-restic-bench}
HERE=$(dirname "$(realpath "$0")")
export AWS_ACCESS_KEY_ID=$CEPH_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$CEPH_S3_SECRET_KEY
export RESTIC_PASSWORD=bench-password CDC_PASSWORD=bench-password
rm -rf "$W"; mkdir -p "$W"
UP=${CEPH_S3_ENDPOINT#http://}
python3 "$HERE/s3_count_proxy.py" 38201 "$UP" "$W/restic.json" & P1=$!
python3 "$HERE/s3_count_proxy.py" 38202 "$UP" "$W/cdc.json" & P2=$!
trap 'kill $P1 $P2' EXIT
sleep 1
tag=$(date +%s)
R=s3:http://127.0.0.1:38201/bench/restic-$tag
restic -q -r "$R" init >/dev/null
"$CDC" store init -q --packs "s3://bench/cdc-$tag" --s3-endpoint http://127.0.0.1:38202 "$W/store"
snap() { for t in restic cdc; do cp "$W/$t.json" "$W/$t-$1.json" 2>/dev/null || echo '{}' > "$W/$t-$1.json"; done; }
snap init
for f in "$V"/day*.tar; do
  d=$(basename "$f" .tar)
  /usr/bin/time -f "restic put $d %e s %M KB" restic -q -r "$R" backup "$f" >/dev/null
  /usr/bin/time -f "cdc    put $d %e s %M KB" "$CDC" store backup -q "$W/store" "$f" >/dev/null
done
snap put
last=$(ls "$V"/day*.tar | tail -1)
/usr/bin/time -f "restic get %e s %M KB" restic -q -r "$R" restore latest --target "$W/r"
/usr/bin/time -f "cdc    get %e s %M KB" "$CDC" store get -q "$W/store" latest -o "$W/c"
cmp "$W/r$last" "$last" && cmp "$W/c$last" "$last" && echo "both restores identical"
snap get
for s in init put get; do echo "requests after $s: restic $(cat "$W/restic-$s.json") cdc $(cat "$W/cdc-$s.json")"; done
