#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `cdc store get` of one file whose packs are in S3, against the RGW's own
# GET of the same bytes (issue 37: get >= 0.8x the RGW's GET throughput).
# A one-node Ceph with radosgw is started here (tests/engines/ceph.sh). The
# file is put into a store whose packs are in one bucket; the same file is
# also uploaded whole as one object of another bucket. Each round then
# times, interleaved: `cdc store get` of the file, and `curl` GETting the
# object into a file of the same folder (one stream, as RGW serves it).
#   bench/engines/s3_get_vs_rgw.sh [SPEC] [ROUNDS] [WORK]   (CDC: the cdc to run)
# VARIANTS="label=PATH ..." also times `cdc store get` with each of these
# cdc-store-s3 programs (other builds of the S3 pack storage) in each round.
# SPEC is a `cdc gen` spec (default splitmix64:7:512M: incompressible, so
# the store's packs hold as many bytes as the object); text:7:512M shows a
# compressible file (fewer bytes over the wire than the object's).
set -euo pipefail
spec=${1:-splitmix64:7:512M}
rounds=${2:-3}
work=$(realpath -m "${3:-$(mktemp -d /tmp/cdc-s3-get-XXXXXX)}")
repo=$(cd "$(dirname "$0")/../.." && pwd)
cdc=${CDC:-$repo/build/cdc}
mkdir -p "$work"
# shellcheck source=bench/engines/with_ceph.sh
. "$repo/bench/engines/with_ceph.sh"
s3 PUT cdc-get >/dev/null
s3 PUT raw-get >/dev/null
"$cdc" gen -q "$spec" -o "$work/file"
bytes=$(stat -c %s "$work/file")
s3 PUT raw-get/file -T "$work/file" >/dev/null
"$cdc" store init --no-encryption -q --packs s3://cdc-get/s --s3-endpoint "$CEPH_S3_ENDPOINT" "$work/store"
"$cdc" store put -q "$work/store" "$work/file" --name file
echo "file $spec: $bytes bytes; store: $("$cdc" store stats --json "$work/store" |
  /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("stored_bytes", d))') stored bytes"
timed() {  # prints wall seconds of COMMAND...
  local t0 t1
  t0=$(date +%s.%N); "$@"; t1=$(date +%s.%N)
  /usr/bin/python3 -c "print(f'{$t1 - $t0:.3f}')"
}
declare -A times
labels=(rgw cdc)
for v in ${VARIANTS:-}; do labels+=("${v%%=*}"); done
for ((r = 1; r <= rounds; r++)); do
  line="round $r:"
  for l in "${labels[@]}"; do
    rm -f "$work/out"
    case $l in
      rgw) t=$(timed s3 GET raw-get/file -o "$work/out") ;;
      cdc) t=$(timed "$cdc" store get -q "$work/store" file -o "$work/out") ;;
      *) for v in $VARIANTS; do [[ ${v%%=*} == "$l" ]] && helper=${v#*=}; done
         t=$(CDC_STORE_S3=$helper timed "$cdc" store get -q "$work/store" file -o "$work/out") ;;
    esac
    cmp -s "$work/file" "$work/out" || { echo "$l: the GET returned other bytes" >&2; exit 1; }
    times[$l]+="$t "
    line+=" $l $t s,"
  done
  echo "${line%,}"
done
for l in "${labels[@]}"; do echo "$l ${times[$l]}"; done | /usr/bin/python3 -c '
import statistics, sys
n = int(sys.argv[1]); med = {}
for line in sys.stdin:
    label, *ts = line.split(); med[label] = statistics.median(float(t) for t in ts)
rg = med["rgw"]
for label, m in med.items():
    extra = "" if label == "rgw" else f": {rg / m:.2f}x the RGW GET throughput"
    print(f"median {label}: {m:.3f} s ({n / m / 1e6:.0f} MB/s){extra}")
' "$bytes"
