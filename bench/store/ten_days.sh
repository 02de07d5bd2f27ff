#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Ten daily snapshots of one tree: cdc store backup against restic backup
# and borg create, each tool's cache warm as in daily use.
#
#   bench/store/ten_days.sh [DAYS_DIR] [WORK_DIR]
#
# DAYS_DIR (default /tmp/cdc-days) holds the ten states of
# bench/store/make_tree_days.py (made if missing: ~25k files, ~600 MB, 1.5%
# of the files changed a day, symlinks, hard links, empty directories).
# Each day is copied with `rsync -aHAX --delete` into one fixed path
# (WORK_DIR/live), then every tool snapshots that path: cdc at 64 KiB
# average chunks (fastcdc 16K/64K/256K, zstd 3, encrypted: the default),
# borg at 64 KiB (buzhash,14,18,16, zstd 3, repokey-blake2), restic with its
# own chunker (~1 MiB, compression auto, always encrypted). Then each
# forgets the five oldest snapshots and prunes; cdc restores each of the
# five it kept and `rsync -naicHAX --numeric-ids` against that day's tree
# must list nothing; then each snapshots the unchanged tree once more.
# Every step is timed by bench/store/timed.py (wall, CPU, peak RSS).
# Prints a markdown table; docs/BENCHMARKS.md has the figures.
#   VARIANTS="cdc-64k cdc-8k" adds cdc with its default sizes (8 KiB).
set -euo pipefail
cd "$(dirname "$0")/../.."
days_dir="${1:-/tmp/cdc-days}"
work="${2:-/tmp/cdc-days-bench}"
cdc="$(realpath "${CDC:-build/cdc}")"
[[ -x "$cdc" ]] || { echo "ten_days.sh: no cdc at $cdc (scripts/build.sh release)" >&2; exit 2; }
scripts/install-deps.sh --peers
# shellcheck disable=SC2086
/usr/bin/python3 bench/store/make_tree_days.py "$days_dir" ${DAYS_ARGS:-}
keep="${KEEP:-5}"   # snapshots kept by the forget step
rm -rf "$work"
mkdir -p "$work/repos"
live="$work/live"
export BORG_BASE_DIR="$work/borg-home" BORG_PASSPHRASE=bench RESTIC_PASSWORD=bench XDG_CACHE_HOME="$work/cache"
export BORG_RELOCATED_REPO_ACCESS_IS_OK=yes
printf 'bench' > "$work/password"
chmod 600 "$work/password"
export CDC_PASSWORD_FILE="$work/password"
results="$work/results.jsonl"
: > "$results"
variants=(${VARIANTS:-cdc-64k})

run() {  # TOOL STEP -- command...
  local tool=$1 step=$2
  shift 3
  bench/store/timed.py - "$@" > "$work/time" 2> "$work/err" \
    || { echo "ten_days.sh: $tool $step failed:" >&2; cat "$work/err" >&2; exit 1; }
  read -r wall cpu rss < "$work/time"
  printf '{"tool":"%s","step":"%s","wall":%s,"cpu":%s,"rss_kb":%s}\n' "$tool" "$step" "$wall" "$cpu" "$rss" >> "$results"
}
size_of() { du -sb "$1" | cut -f1; }

for v in "${variants[@]}"; do
  case "$v" in
    cdc-64k) "$cdc" store init -q "$work/repos/$v" -a fastcdc --min 16K --avg 64K --max 256K --zstd-level 3 ;;
    cdc-8k) "$cdc" store init -q "$work/repos/$v" --zstd-level 3 ;;
    *) echo "ten_days.sh: unknown variant $v" >&2; exit 2 ;;
  esac
done
borg init --encryption=repokey-blake2 "$work/repos/borg"
restic init -q --repository-version 2 -r "$work/repos/restic"

backup() {  # STEP: every tool snapshots the live tree
  local step=$1
  for v in "${variants[@]}"; do
    run "$v" "$step" -- "$cdc" store backup -q "$work/repos/$v" "$live"
  done
  run borg "$step" -- borg create --chunker-params buzhash,14,18,16,4095 -C zstd,3 \
    "$work/repos/borg::{now:%Y-%m-%dT%H:%M:%S.%f}" "$live"
  run restic "$step" -- restic -q -r "$work/repos/restic" backup --compression auto "$live"
}

for day in "$days_dir"/day*; do
  rsync -aHAX --delete --numeric-ids "$day/" "$live/"
  find "$live" -type f -exec cat {} + > /dev/null   # the page cache warm for every tool alike
  backup "day$(basename "$day" | tr -dc 0-9)"
  echo "ten_days.sh: $(basename "$day") done" >&2
done
for v in "${variants[@]}" borg restic; do
  [[ $v == borg ]] && d="$work/repos/borg" || d="$work/repos/$v"
  printf '{"tool":"%s","step":"size10","bytes":%s}\n' "$v" "$(size_of "$d")" >> "$results"
done

# Forget the five oldest and reclaim their space.
for v in "${variants[@]}"; do
  run "$v" forget -- "$cdc" store forget -q "$work/repos/$v" --keep-last $keep --prune
done
run borg forget -- sh -c "borg prune --keep-last $keep '$work/repos/borg' && borg compact '$work/repos/borg'"
run restic forget -- restic -q -r "$work/repos/restic" forget --keep-last $keep --prune
for v in "${variants[@]}" borg restic; do
  [[ $v == borg ]] && d="$work/repos/borg" || d="$work/repos/$v"
  printf '{"tool":"%s","step":"size5","bytes":%s}\n' "$v" "$(size_of "$d")" >> "$results"
done

# The five kept restore identical: bytes and metadata.
for v in "${variants[@]}"; do
  mapfile -t ids < <("$cdc" store snapshots --json "$work/repos/$v" \
    | /usr/bin/python3 -c 'import json,sys; [print(s["id"]) for s in sorted(json.load(sys.stdin), key=lambda s: s["time_ns"])]')
  kept=("$days_dir"/day*)
  kept=("${kept[@]: -$keep}")
  [[ ${#ids[@]} -eq $keep ]] || { echo "ten_days.sh: $v kept ${#ids[@]} snapshots, not $keep" >&2; exit 1; }
  for ((k = 0; k < keep; k++)); do
    out="$work/restore-$v-$k"
    run "$v" "restore$k" -- "$cdc" store get -q "$work/repos/$v" "${ids[$k]}:$live" -o "$out"
    diffs=$(rsync -naicHAX --numeric-ids "${kept[$k]}/" "$out/" || true)
    [[ -z "$diffs" ]] || { echo "ten_days.sh: $v snapshot ${ids[$k]} differs from ${kept[$k]}:" >&2; echo "$diffs" | head -20 >&2; exit 1; }
    rm -rf "$out"
  done
done
echo "ten_days.sh: the $keep kept snapshots restore identical (rsync -naicHAX --numeric-ids lists nothing)" >&2

backup unchanged

/usr/bin/python3 - "$results" "${variants[@]}" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
tools = sys.argv[2:] + ["borg", "restic"]
def get(tool, step, key):
    return next((r[key] for r in rows if r["tool"] == tool and r["step"] == step), None)
def days(tool, key):
    return [r[key] for r in rows if r["tool"] == tool and r["step"].startswith("day")]
print("| tool | 10 snapshots s (CPU s) | peak RSS MB | repo after 10 MB | forget 5 + prune s (CPU s) | repo after 5 MB | unchanged re-snapshot s (CPU s) |")
print("|---|---|---|---|---|---|---|")
for t in tools:
    print(f"| {t} | {sum(days(t,'wall')):.1f} ({sum(days(t,'cpu')):.1f}) | {max(days(t,'rss_kb'))/1024:.0f} | "
          f"{get(t,'size10','bytes')/1e6:.0f} | {get(t,'forget','wall'):.2f} ({get(t,'forget','cpu'):.2f}) | "
          f"{get(t,'size5','bytes')/1e6:.0f} | {get(t,'unchanged','wall'):.2f} ({get(t,'unchanged','cpu'):.2f}) |")
c = tools[0]
fastest = min(sum(days(t, "wall")) for t in ("borg", "restic"))
smallest = min(get(t, "size10", "bytes") for t in ("borg", "restic"))
print()
print(f"{c}: 10 snapshots {sum(days(c,'wall'))/fastest:.2f}x the fastest peer (target <= 0.5); "
      f"repository {get(c,'size10','bytes')/smallest:.3f}x the smallest (target <= 1.05); "
      f"peak RSS {max(days(c,'rss_kb'))/1024:.0f} MB (target <= 100); "
      f"unchanged {get(c,'unchanged','wall')/get('restic','unchanged','wall'):.2f}x restic (target <= 0.5); "
      f"forget+prune {get(c,'forget','wall')/get('restic','forget','wall'):.2f}x restic (target <= 0.5)")
EOF
