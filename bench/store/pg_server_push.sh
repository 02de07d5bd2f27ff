#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Pushes to a PostgreSQL-backed `cdc serve`: a tree changed since its parent
# (the two days of make_tree_days.py, each pushed from the other) and a
# one-file named push, with the wall time and the server's logins of each.
#
#   tests/engines/postgres.sh start /tmp/pg      # a private cluster (log_connections on)
#   python3 bench/store/make_tree_days.py --days 2 --files 8000 /tmp/days
#   bench/store/pg_server_push.sh /tmp/pg /tmp/days [CDC_BINARY]
set -euo pipefail
pg=${1:?usage: pg_server_push.sh PG_DIR DAYS_DIR [CDC_BINARY]}
days=${2:?usage: pg_server_push.sh PG_DIR DAYS_DIR [CDC_BINARY]}
cdc=${3:-$(cd "$(dirname "$0")/../.." && pwd)/build/cdc}
. "$pg/env"
export PGPASSWORD=$PG_PASSWORD
db=push_$$_$RANDOM
psql -q -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d "$PG_DB" -c "CREATE DATABASE $db"
work=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill -INT "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
"$cdc" store init -q "$work/store" --catalog "postgresql://$PG_USER@$PG_HOST:$PG_PORT/$db" --no-encryption
"$cdc" serve --store "$work/store" --listen 127.0.0.1:0 --port-file "$work/port" --no-token >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
to=127.0.0.1:$(cat "$work/port")
logins() { grep -c "connection authorized: user=$PG_USER database=$db" "$pg/server.log" || true; }
timed() {  # LABEL COMMAND...: wall seconds and the server's logins
    local label=$1; shift
    local before start end
    before=$(logins); start=$(date +%s.%N)
    "$@" >/dev/null
    end=$(date +%s.%N)
    printf '%-28s %6.3f s  %3d logins\n' "$label" "$(echo "$end - $start" | bc)" "$(( $(logins) - before ))"
}
tree=$work/tree
rsync -a --delete "$days/day01/" "$tree/"
"$cdc" push -q --to "$to" "$tree" >/dev/null
for d in day02 day01 day02 day01; do
    rsync -a --delete "$days/$d/" "$tree/"
    timed "snapshot push, $d" "$cdc" push -q --to "$to" "$tree"
done
head -c 300000 /dev/urandom >"$work/one.bin"
for i in 1 2 3 4 5; do
    head -c 1000 /dev/urandom >>"$work/one.bin"
    timed "one file (--names), $i" "$cdc" push -q --to "$to" --names "$work/one.bin"
done
