#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A tree pushed as a snapshot against `store backup` of the same tree:
# day 1 then day 2 (and an unchanged re-push) of bench/store/make_tree_days.py,
# each copied with `rsync -aHAX --delete` into one fixed path (WORK_DIR/live).
# `cdc store backup` writes into one store; `cdc push` sends to a `cdc serve`
# of another on the loopback interface (both at 64 KiB average chunks, plain,
# as the figures in docs/BENCHMARKS.md were taken). Every step is timed by
# bench/store/timed.py (wall, CPU of the client, peak RSS of the client);
# the pushed snapshot of day 2 is pulled back and checked with
# `rsync -naicHAX --numeric-ids` against day 2.
#
#   bench/store/push_days.sh [DAYS_DIR] [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
days_dir="${1:-/tmp/cdc-days}"
work="${2:-/tmp/cdc-push-days}"
cdc="$(realpath "${CDC:-build/cdc}")"
[[ -x "$cdc" ]] || { echo "push_days.sh: no cdc at $cdc (scripts/build.sh release)" >&2; exit 2; }
# shellcheck disable=SC2086
/usr/bin/python3 bench/store/make_tree_days.py "$days_dir" ${DAYS_ARGS:-}
rm -rf "$work"
mkdir -p "$work"
live="$work/live"
export XDG_CONFIG_HOME="$work/config"
results="$work/results.jsonl"
: > "$results"
for s in backup push; do
  "$cdc" store init -q --no-encryption "$work/$s" -a fastcdc --min 16K --avg 64K --max 256K --zstd-level 3
done
"$cdc" serve --store "$work/push" --listen 127.0.0.1:0 --port-file "$work/port" -q 2> "$work/serve.err" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 200); do [[ -s "$work/port" ]] && break; sleep 0.05; done
addr="127.0.0.1:$(cat "$work/port")"

run() {  # TOOL STEP -- command...
  local tool=$1 step=$2
  shift 3
  bench/store/timed.py "$work/out.json" "$@" > "$work/time" 2> "$work/err" \
    || { echo "push_days.sh: $tool $step failed:" >&2; cat "$work/err" >&2; exit 1; }
  read -r wall cpu rss < "$work/time"
  printf '{"tool":"%s","step":"%s","wall":%s,"cpu":%s,"rss_kb":%s,"out":%s}\n' "$tool" "$step" "$wall" "$cpu" "$rss" \
    "$(cat "$work/out.json")" >> "$results"
}

step() {  # STEP
  find "$live" -type f -exec cat {} + > /dev/null   # the page cache warm for both alike
  run backup "$1" -- "$cdc" store backup --json "$work/backup" "$live"
  run push "$1" -- "$cdc" push --to "$addr" --json "$live"
}
for day in day01 day02; do
  rsync -aHAX --delete --numeric-ids "$days_dir/$day/" "$live/"
  step "$day"
done
step unchanged
"$cdc" pull --from "$addr" "latest:$live" -o "$work/pulled" -q
diffs=$(rsync -naicHAX --numeric-ids "$days_dir/day02/" "$work/pulled/" || true)
[[ -z "$diffs" ]] || { echo "push_days.sh: the pushed day 2 differs:" >&2; echo "$diffs" | head -20 >&2; exit 1; }
echo "push_days.sh: the pushed day 2 pulls back identical (rsync -naicHAX --numeric-ids lists nothing)" >&2

/usr/bin/python3 - "$results" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| step | tool | wall s | CPU s (client) | peak RSS MB (client) | files read | files not read (unchanged) | bytes sent / new |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    o = r["out"]
    t = o["totals"]
    if r["tool"] == "push":
        read, sent = o["files_pushed"], f'{o["bytes_sent"]/1e6:.1f} MB sent'
    else:
        read, sent = t["files"] - t["skipped_unchanged"], f'{t["new_bytes"]/1e6:.1f} MB new'
    print(f'| {r["step"]} | {r["tool"]} | {r["wall"]:.2f} | {r["cpu"]:.2f} | {r["rss_kb"]/1024:.0f} | {read} | '
          f'{t["skipped_unchanged"]} | {sent} |')
PY
