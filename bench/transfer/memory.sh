#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Peak memory of a push then a pull of one file, then of the push again
# under the same name (the server reads the stored file's groups), a fresh
# server each.
#   bench/transfer/memory.sh CDC FILE TAG
# CDC is a cdc binary (CDC_TRANSFER picks its helper; SRV, if set, the
# server's helper). Prints "TAG push|pull wall S client KiB server KiB":
# client from /usr/bin/time %M, server VmHWM. Uses /tmp/cdc-mem-TAG.
set -euo pipefail
cdc=$1; big=$2; tag=$3; w=/tmp/cdc-mem-$tag
rm -rf "$w"; mkdir -p "$w"
"$cdc" store init --no-encryption "$w/store" >/dev/null
serve() {
  rm -f "$w/port"
  CDC_TRANSFER=${SRV:-${CDC_TRANSFER:-}} "$cdc" serve --store "$w/store" --listen 127.0.0.1:0 --port-file "$w/port" -q &
  server=$!
  while [[ ! -s "$w/port" ]]; do sleep 0.05; done
  port=$(cat "$w/port")
}
stop() { kill "$server"; wait "$server" 2>/dev/null || true; }
serve
/usr/bin/time -f '%e %M' -o "$w/t" "$cdc" push --to "127.0.0.1:$port" "$big" --name big -q
read -r wall rss < "$w/t"; s=$(awk '/^VmHWM:/ {print $2}' "/proc/$server/status"); stop
echo "$tag push wall $wall client $rss server $s"
serve
/usr/bin/time -f '%e %M' -o "$w/t" "$cdc" pull --from "127.0.0.1:$port" big -o "$w/out" -q
read -r wall rss < "$w/t"; s=$(awk '/^VmHWM:/ {print $2}' "/proc/$server/status"); stop
echo "$tag pull wall $wall client $rss server $s"
cmp "$big" "$w/out"
serve
/usr/bin/time -f '%e %M' -o "$w/t" "$cdc" push --to "127.0.0.1:$port" "$big" --name big -q
read -r wall rss < "$w/t"; s=$(awk '/^VmHWM:/ {print $2}' "/proc/$server/status"); stop
echo "$tag re-push wall $wall client $rss server $s"
rm -rf "$w"
