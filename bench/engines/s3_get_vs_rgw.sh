#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `cdc store get` of one file whose packs are in S3, against the RGW's own
# GET of the same bytes (issue 37: get >= 0.8x the RGW's GET throughput).
# A one-node Ceph with radosgw is started here (tests/engines/ceph.sh). The
# file is put into a store whose packs are in one bucket; the same file is
# also uploaded whole as one object of another bucket. Each round then
# times, interleaved (each round in another order): `cdc store get` of the
# file, and `curl` GETting the object into a file of the same folder (one
# stream, as RGW serves it).
#   bench/engines/s3_get_vs_rgw.sh [SPEC] [ROUNDS] [WORK]   (CDC: the cdc to run)
# VARIANTS="label=PATH ..." also times `cdc store get` with each of these
# cdc-store-s3 programs (other builds of the S3 pack storage) in each round.
# SPEC is a `cdc gen` spec (default splitmix64:7:512M: incompressible, so
# the store's packs hold as many bytes as the object); text:7:512M shows a
# compressible file (fewer bytes over the wire than the object's).
# Each run also counts the CPU seconds it cost: the client's (curl or cdc,
# user + system, /usr/bin/time) and radosgw's, the OSD's and the monitor's
# (/proc/PID/stat before and after); the medians are printed per label, with
# the bound two cores set when every process is CPU-bound (wall >= the sum
# of their CPU seconds / 2).
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
tck=$(getconf CLK_TCK)
daemons=(rgw:"$CEPH_RGW_PID_FILE")
for f in "$work"/ceph/run/osd.*.pid; do daemons+=(osd:"$f"); done
for f in "$work"/ceph/run/mon.*.pid; do daemons+=(mon:"$f"); done
ticks() {  # utime + stime of the process in pid file $1, in clock ticks
  local stat; stat=$(cat "/proc/$(cat "$1")/stat")
  stat=${stat##*) }  # (after the command name)
  read -r -a f <<<"$stat"
  echo $((f[11] + f[12]))
}
timed() {  # prints "wall client_cpu rgw_cpu osd_cpu mon_cpu" (seconds) of COMMAND...
  local d before=() after=() i
  for d in "${daemons[@]}"; do before+=("$(ticks "${d#*:}")"); done
  local TIMEFORMAT="%3R %3U %3S"
  { time "$@" 2>&3; } 3>&2 2>"$work/cpu"
  for d in "${daemons[@]}"; do after+=("$(ticks "${d#*:}")"); done
  local spent=""
  for i in "${!daemons[@]}"; do spent+="${daemons[$i]%%:*}=$((after[i] - before[i])) "; done
  /usr/bin/python3 -c "
import sys
w, u, s = map(float, open('$work/cpu').read().split()[-3:])
per = {'rgw': 0, 'osd': 0, 'mon': 0}
for kv in sys.argv[1:]:
    k, v = kv.split('='); per[k] += int(v) / $tck
print(f'{w:.3f} {u + s:.2f} {per[\"rgw\"]:.2f} {per[\"osd\"]:.2f} {per[\"mon\"]:.2f}')" $spent
}
declare -A times
labels=(rgw cdc)
for v in ${VARIANTS:-}; do labels+=("${v%%=*}"); done
for ((r = 1; r <= rounds; r++)); do
  line="round $r:"
  # Each round starts one label later: the first get after another's output
  # was written and removed pays more for its own writes on a VM (the pages
  # the host took back), so no label keeps one place (docs/BENCHMARKS.md).
  order=()
  for ((i = 0; i < ${#labels[@]}; i++)); do order+=("${labels[$(((i + r - 1) % ${#labels[@]}))]}"); done
  for l in "${order[@]}"; do
    rm -f "$work/out"
    case $l in
      rgw) t=$(timed s3 GET raw-get/file -o "$work/out") ;;
      cdc) t=$(timed "$cdc" store get -q "$work/store" file -o "$work/out") ;;
      *) for v in $VARIANTS; do [[ ${v%%=*} == "$l" ]] && helper=${v#*=}; done
         t=$(CDC_STORE_S3=$helper timed "$cdc" store get -q "$work/store" file -o "$work/out") ;;
    esac
    cmp -s "$work/file" "$work/out" || { echo "$l: the GET returned other bytes" >&2; exit 1; }
    read -r wall cpu rgw osd mon <<<"$t"
    times[$l]+="$wall,$cpu,$rgw,$osd,$mon "
    line+=" $l $wall s (cpu: client $cpu rgw $rgw osd $osd mon $mon),"
  done
  echo "${line%,}"
done
for l in "${labels[@]}"; do echo "$l ${times[$l]}"; done | /usr/bin/python3 -c '
import statistics, sys
n = int(sys.argv[1]); med = {}; cpu = {}
for line in sys.stdin:
    label, *runs = line.split()
    cols = [[float(x) for x in r.split(",")] for r in runs]
    med[label] = statistics.median(c[0] for c in cols)
    cpu[label] = [statistics.median(c[i] for c in cols) for i in range(1, 5)]
rg = med["rgw"]
for label, m in med.items():
    extra = "" if label == "rgw" else f": {rg / m:.2f}x the RGW GET throughput"
    print(f"median {label}: {m:.3f} s ({n / m / 1e6:.0f} MB/s){extra}")
names = ("client", "rgw", "osd", "mon")
for label, c in cpu.items():
    total = sum(c)
    print(f"  {label} CPU s (median): " + ", ".join(f"{k} {v:.2f}" for k, v in zip(names, c)) +
          f"; sum {total:.2f} = {total / n * 1e9:.2f} CPU s/GB; two cores bound the wall to >= {total / 2:.3f} s")
' "$bytes"
