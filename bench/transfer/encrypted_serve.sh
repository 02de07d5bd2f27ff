#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The server's CPU for one push and one pull of a file through `cdc serve`,
# of an unencrypted store and of an encrypted one, rounds interleaved
# (docs/BENCHMARKS.md "Serving an encrypted store"). The CPU is the server
# process's utime + stime (/proc/PID/stat) across each command; the key slot
# is made with CDC_TEST_FAST_KDF=1 (the data path's figures).
#
#   bench/transfer/encrypted_serve.sh FILE CDC
#
# ROUNDS (default 3); WORK (default /tmp/cdc-serve-enc) holds the stores.
set -euo pipefail
file=$1
cdc=$2
rounds=${ROUNDS:-3}
work=${WORK:-/tmp/cdc-serve-enc}
rm -rf "$work"
mkdir -p "$work"
printf 'bench password' > "$work/pw"
chmod 600 "$work/pw"
export CDC_PASSWORD_FILE="$work/pw" CDC_TEST_FAST_KDF=1 XDG_CONFIG_HOME="$work/config"
ticks=$(getconf CLK_TCK)
echo "| store | push: server CPU s | pull: server CPU s |"
echo "|---|---|---|"
for ((r = 0; r < rounds; r++)); do
  for kind in plain encrypted; do
    d="$work/$kind"
    rm -rf "$d" "$work/port" "$work/back"
    if [[ $kind == plain ]]; then "$cdc" store init -q --no-encryption "$d"; else "$cdc" store init -q "$d"; fi
    "$cdc" serve --store "$d" --listen 127.0.0.1:0 --port-file "$work/port" -q &
    pid=$!
    for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
    addr=127.0.0.1:$(cat "$work/port")
    cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }  # (cdc serve execs cdc-transfer: one pid)
    c0=$(cpu)
    "$cdc" push -q --to "$addr" "$file" --name f
    c1=$(cpu)
    "$cdc" pull -q --from "$addr" f -o "$work/back"
    c2=$(cpu)
    cmp "$file" "$work/back"
    kill "$pid"
    wait "$pid" || true
    awk -v k="$kind" -v a=$((c1 - c0)) -v b=$((c2 - c1)) -v t="$ticks" \
      'BEGIN { printf "| %s | %.2f | %.2f |\n", k, a / t, b / t }'
  done
done
