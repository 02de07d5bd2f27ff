#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A one-node Ceph with radosgw for the tests (the `engines` CTest label):
# one monitor, one OSD (bluestore on a sparse file), no manager, radosgw on
# loopback, every port ephemeral, everything inside DIR.
#
#   tests/engines/ceph.sh start DIR   # prints nothing on success; writes DIR/env
#   tests/engines/ceph.sh stop DIR    # stops what start started (by its pid files)
#
# DIR/env holds shell assignments the tests read: CEPH_S3_ENDPOINT
# (http://127.0.0.1:PORT), CEPH_S3_ACCESS_KEY, CEPH_S3_SECRET_KEY, CEPH_S3_REGION,
# CEPH_RGW_PID_FILE and CEPH_RGW_CMD (to stop and start radosgw alone), CEPH_CONF.
# Runs as root (CI) or as any user (nothing outside DIR, no privileged port).
# Packages: ceph-mon ceph-osd radosgw ceph-common (scripts/install-deps.sh).
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
cmd=$1
dir=$(realpath -m "$2")

log() { echo "ceph.sh: $*" >&2; }

stop_all() {
  local pid
  # radosgw first, the monitor last
  for f in "$dir"/run/client.rgw.pid "$dir"/run/osd.*.pid "$dir"/run/mon.*.pid; do
    [[ -f $f ]] || continue
    pid=$(cat "$f")
    if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
}

if [[ $cmd == stop ]]; then
  stop_all
  rm -f "$dir/osd-block"  # (the OSD's data: of no use once stopped)
  exit 0
fi
[[ $cmd == start ]] || usage

for b in ceph-mon ceph-osd radosgw radosgw-admin ceph monmaptool ceph-authtool /usr/bin/python3; do
  command -v "$b" >/dev/null || { log "$b is missing: run scripts/install-deps.sh"; exit 1; }
done

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

mkdir -p "$dir"/{run,log,mon,osd,rgw}
mon_port=$(free_port)
rgw_port=$(free_port)
while [[ $rgw_port == "$mon_port" ]]; do rgw_port=$(free_port); done
fsid=$(cat /proc/sys/kernel/random/uuid)
conf=$dir/ceph.conf
cat >"$conf" <<EOF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$mon_port
ms bind msgr1 = false
public addr = 127.0.0.1
# No authentication (a private test cluster on loopback); without crc modes
# radosgw hangs on "get_initial_auth_request returned -13".
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
ms client mode = crc
ms mon cluster mode = crc
ms cluster mode = crc
ms service mode = crc
ms mon service mode = crc
keyring = $dir/keyring
run dir = $dir/run
admin socket = $dir/run/\$name.asok
log file = $dir/log/\$name.log
pid file = $dir/run/\$name.pid
crash dir = $dir/crash
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
# Small caches: ~220 MB for the three daemons.
osd memory target = 268435456
bluestore cache autotune = false
bluestore cache size = 67108864
# The monitor refuses to start below 5% free on its file system (a shared
# machine's disk may be that full and still hold a test cluster's few GB).
mon data avail crit = 1
mon osd full ratio = 0.97
mon osd nearfull ratio = 0.95
osd failsafe full ratio = 0.98

[mon]
mon data = $dir/mon/\$cluster-\$id

[osd]
osd data = $dir/osd/\$cluster-\$id
osd objectstore = bluestore
# The block file outside the OSD directory (a "block" inside it is taken
# for a link to a device).
bluestore block path = $dir/osd-block
bluestore block create = true
bluestore block size = 10737418240
bluestore block db create = false
bluestore block wal create = false
osd max object name len = 256
osd max object namespace len = 64

[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$rgw_port
rgw data = $dir/rgw
rgw enable usage log = false
rgw dynamic resharding = false
# A quota is checked against the bucket's stats as they are now, not as
# cached up to 10 minutes ago (the quota tests fill a bucket at once).
rgw bucket quota ttl = 0
EOF

t0=$(date +%s.%N)
ceph-authtool --create-keyring "$dir/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" "$dir/monmap" >/dev/null
ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/keyring"
ceph-mon -c "$conf" -i a 2>>"$dir/log/daemons.err"
ceph_cli() { timeout 60 ceph -c "$conf" --connect-timeout 30 "$@"; }
osd_uuid=$(cat /proc/sys/kernel/random/uuid)
osd_id=$(ceph_cli osd new "$osd_uuid")
mkdir -p "$dir/osd/ceph-$osd_id"
ceph-osd -c "$conf" -i "$osd_id" --mkfs --osd-uuid "$osd_uuid" 2>"$dir/log/osd-mkfs.err" >/dev/null ||
  { cat "$dir/log/osd-mkfs.err" >&2; exit 1; }
ceph-osd -c "$conf" -i "$osd_id" 2>>"$dir/log/daemons.err"
# radosgw's pools need the OSD up (its first start creates them).
for _ in $(seq 1 600); do
  if ceph_cli osd dump 2>/dev/null | grep -q "^osd.$osd_id up"; then break; fi
  sleep 0.1
done
ceph_cli osd dump | grep -q "^osd.$osd_id up" || { log "the OSD did not come up (see $dir/log)"; exit 1; }

access=cdctestaccess$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')
secret=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
rgw_cmd="radosgw -c $conf -n client.rgw"
$rgw_cmd 2>>"$dir/log/daemons.err"
for _ in $(seq 1 900); do
  if /usr/bin/python3 - "$rgw_port" <<'PY' 2>/dev/null; then break; fi
import sys, urllib.request
urllib.request.urlopen("http://127.0.0.1:%s/" % sys.argv[1], timeout=2).read()
PY
  sleep 0.1
done
timeout 120 radosgw-admin -c "$conf" user create --uid=cdc-test --display-name="cdc tests" \
  --access-key="$access" --secret-key="$secret" >/dev/null
cat >"$dir/env" <<EOF
CEPH_CONF=$conf
CEPH_S3_ENDPOINT=http://127.0.0.1:$rgw_port
CEPH_S3_REGION=us-east-1
CEPH_S3_ACCESS_KEY=$access
CEPH_S3_SECRET_KEY=$secret
CEPH_RGW_PID_FILE=$dir/run/client.rgw.pid
CEPH_RGW_CMD="$rgw_cmd"
EOF
t1=$(date +%s.%N)
log "up in $(/usr/bin/python3 -c "print(round($t1 - $t0, 1))") s: radosgw on http://127.0.0.1:$rgw_port"
