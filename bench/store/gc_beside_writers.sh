#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gc of half the snapshots while 2 writers back up, against restic (issue
# 37's "gc of half the snapshots while 2 writers put ... time vs restic
# prune"; docs/BENCHMARKS.md "gc while writers write").
#
# Six daily states of a tree (make_tree_days.py) are backed up, one
# snapshot each, into a cdc store with a PostgreSQL catalog (local packs)
# and into a local restic repository. Then, per tool, 2 backups of days 7
# and 8 start at once and, 100 ms later, forget of the 3 oldest snapshots
# with prune. cdc's gc runs beside the writers (it marks, waits for their
# sessions, sweeps). restic's prune needs the repository's exclusive lock,
# which its backups' shared locks refuse: it is retried every 100 ms until
# it takes the lock (what restic 0.16's --retry-lock does; Debian's 0.14
# has no such option). Figures: when the writers ended and when the
# forget + prune ended, from the start of the writers; then the same
# forget + prune of 3 more with no writer. At the end every kept snapshot
# of both tools is restored and compared with its day (rsync -naicHAX).
#
#   tests/engines/postgres.sh start /tmp/pg
#   bench/store/gc_beside_writers.sh /tmp/pg [build/cdc] [WORK] [ROUNDS]
#
# DAYS_ARGS (make_tree_days.py's options, default "--files 8000") sizes
# the tree.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 PG_ENGINE_DIR [CDC] [WORK] [ROUNDS]" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck disable=SC1091
. "$1/env"
cdc=$(realpath "${2:-build/cdc}")
work=${3:-/tmp/cdc-gc-beside}
rounds=${4:-3}
export PGPASSWORD=$PG_PASSWORD RESTIC_PASSWORD=bench
days="$work/days"
mkdir -p "$work"
/usr/bin/python3 "$here/make_tree_days.py" "$days" --days 8 ${DAYS_ARGS:---files 8000}
results="$work/results.txt"
: > "$results"
now() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$2 - $1:.3f}')"; }

mkdb() {
  /usr/lib/postgresql/15/bin/psql -h "$PG_SOCKET_DIR" -p "$PG_PORT" -U "$PG_USER" -d postgres -q \
    -c "DROP DATABASE IF EXISTS gcbench" -c "CREATE DATABASE gcbench" 2>&1 | grep -v NOTICE || true
}

# snapshot ids of a tool's repository, oldest first
ids() {
  if [[ $1 == cdc ]]; then
    "$cdc" store snapshots --json "$work/cdc" | /usr/bin/python3 -c \
      'import json,sys; [print(s["id"]) for s in sorted(json.load(sys.stdin), key=lambda s: s["time_ns"])]'
  else
    restic -q -r "$work/restic" snapshots --json | /usr/bin/python3 -c \
      'import json,sys; [print(s["short_id"]) for s in sorted(json.load(sys.stdin), key=lambda s: s["time"])]'
  fi
}
backup() {  # TOOL DAY
  if [[ $1 == cdc ]]; then
    "$cdc" store backup -q "$work/cdc" "$days/$2" --host "$2" > /dev/null
  else
    restic -q -r "$work/restic" backup --host "$2" "$days/$2" > /dev/null
  fi
}
forget_prune() {  # TOOL ID...
  local tool=$1
  shift
  if [[ $tool == cdc ]]; then
    "$cdc" store forget -q --prune "$work/cdc" "$@"
    return
  fi
  # restic: retried while the backups hold their locks
  until restic -q -r "$work/restic" forget --prune "$@" > "$work/restic-prune.log" 2>&1; do
    grep -q "locked" "$work/restic-prune.log" || { cat "$work/restic-prune.log" >&2; exit 1; }
    sleep 0.1
  done
}
verify() {  # TOOL: every kept snapshot restores as its day
  local tool=$1 id host out
  for id in $(ids "$tool"); do
    out="$work/out"
    rm -rf "$out"
    if [[ $tool == cdc ]]; then
      host=$("$cdc" store snapshots --json "$work/cdc" | /usr/bin/python3 -c \
        "import json,sys; print([s['host'] for s in json.load(sys.stdin) if s['id']=='$id'][0])")
      "$cdc" store get -q "$work/cdc" "$id:$days/$host" -o "$out"
      src="$out"
    else
      host=$(restic -q -r "$work/restic" snapshots --json "$id" | /usr/bin/python3 -c \
        'import json,sys; print(json.load(sys.stdin)[0]["hostname"])')
      restic -q -r "$work/restic" restore "$id" --target "$out" > /dev/null
      src="$out/$days/$host"
    fi
    if [[ -n $(rsync -naicHAX --numeric-ids --delete "$src/" "$days/$host/") ]]; then
      echo "gc_beside_writers.sh: $tool snapshot $id ($host) does not restore as its day" >&2
      exit 1
    fi
  done
}

for ((r = 0; r < rounds; r++)); do
  for tool in cdc restic; do
    rm -rf "$work/cdc" "$work/restic"
    if [[ $tool == cdc ]]; then
      mkdb
      "$cdc" store init -q --no-encryption --catalog "postgresql://$PG_USER@$PG_HOST:$PG_PORT/gcbench" "$work/cdc"
    else
      restic init -q --repository-version 2 -r "$work/restic"
    fi
    for d in day01 day02 day03 day04 day05 day06; do backup "$tool" "$d"; done
    mapfile -t six < <(ids "$tool")
    find "$days/day07" "$days/day08" -type f -exec cat {} + > /dev/null
    t0=$(now)
    ( backup "$tool" day07; echo "$(now)" > "$work/w1" ) &
    w1=$!
    ( backup "$tool" day08; echo "$(now)" > "$work/w2" ) &
    w2=$!
    sleep 0.1
    forget_prune "$tool" "${six[0]}" "${six[1]}" "${six[2]}"
    tp=$(now)
    wait "$w1" "$w2"
    tw=$(python3 -c "print(max($(cat "$work/w1"), $(cat "$work/w2")))")
    t1=$(now)
    forget_prune "$tool" "${six[3]}" "${six[4]}" "${six[5]}"
    t2=$(now)
    echo "$tool $(elapsed "$t0" "$tw") $(elapsed "$t0" "$tp") $(elapsed "$t1" "$t2")" >> "$results"
    verify "$tool"
    echo "gc_beside_writers.sh: round $((r + 1)) $tool done" >&2
  done
done
rm -rf "$work/out"
python3 - "$results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    tool, writers, prune, alone = line.split()
    rows.setdefault(tool, []).append((float(writers), float(prune), float(alone)))
med = {t: [statistics.median(v[i] for v in r) for i in range(3)] for t, r in rows.items()}
print(f"{'tool':8} {'writers done':>13} {'forget+prune done':>18} {'done (both)':>12} {'forget+prune alone':>19}  (s from the writers' start; medians of {len(rows['cdc'])})")
for t, (w, p, a) in med.items():
    print(f"{t:8} {w:13.2f} {p:18.2f} {max(w, p):12.2f} {a:19.2f}")
c, r = med["cdc"], med["restic"]
print(f"cdc/restic: all done {max(c[0], c[1]) / max(r[0], r[1]):.2f}x, forget+prune beside writers "
      f"{c[1] / r[1]:.2f}x, forget+prune alone {c[2] / r[2]:.2f}x; every kept snapshot restored identical")
PY
