#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A private PostgreSQL cluster for the tests (the `engines` CTest label):
# initdb + pg_ctl from /usr/lib/postgresql/15/bin, listening on loopback on
# an ephemeral port and on a unix socket inside DIR, everything inside DIR.
#
#   tests/engines/postgres.sh start DIR   # prints nothing on success; writes DIR/env
#   tests/engines/postgres.sh stop DIR    # stops what start started
#
# DIR/env holds shell assignments the tests read: PG_HOST (127.0.0.1),
# PG_PORT, PG_USER and PG_PASSWORD (a role with a password: TCP connections
# authenticate with scram-sha-256), PG_DB (a database of that role's),
# PG_SOCKET_DIR (the unix socket's directory: trusted, for administration),
# PG_DATA, and PG_CTL_CMD (pg_ctl as the cluster's user, to stop and start
# the server alone: `$PG_CTL_CMD restart`).
# initdb refuses root (CI runs as root): as root the cluster runs as
# `nobody`, DIR made its own; as any other user it runs as that user.
# Package: postgresql-15 (scripts/install-deps.sh).
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
cmd=$1
dir=$(realpath -m "$2")
bin=/usr/lib/postgresql/15/bin

log() { echo "postgres.sh: $*" >&2; }

as_owner=()
if [[ $(id -u) -eq 0 ]]; then
  as_owner=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
fi
run() { "${as_owner[@]}" "$@"; }

if [[ $cmd == stop ]]; then
  if [[ -f $dir/data/postmaster.pid ]]; then
    run "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  fi
  exit 0
fi
[[ $cmd == start ]] || usage

for b in initdb pg_ctl psql; do
  [[ -x $bin/$b ]] || { log "$bin/$b is missing: run scripts/install-deps.sh"; exit 1; }
done
command -v python3 >/dev/null || { log "python3 is missing"; exit 1; }

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

mkdir -p "$dir"
if [[ ${#as_owner[@]} -gt 0 ]]; then
  # The cluster's user must reach DIR: every parent searchable (not
  # readable), DIR its own.
  p=$dir
  while [[ $p != / ]]; do
    p=$(dirname "$p")
    perms=$(stat -c %A "$p")
    [[ ${perms:9:1} == x || ${perms:9:1} == t ]] || {
      log "'$p' is not searchable by others: the cluster's user (nobody) cannot reach $dir"; exit 1; }
  done
  chown nobody:nogroup "$dir"
fi
chmod 0700 "$dir"

port=$(free_port)
user=cdc
password=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
t0=$(date +%s.%N)
pwfile=$dir/initdb.pw
(umask 077; echo "$password" >"$pwfile")
[[ ${#as_owner[@]} -gt 0 ]] && chown nobody:nogroup "$pwfile"
# The superuser is the role `cdc` (with its password): the tests make
# databases of their own.
run "$bin/initdb" -D "$dir/data" -U "$user" --pwfile="$pwfile" -A scram-sha-256 --auth-local=trust \
  -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
rm -f "$pwfile"
cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 100
shared_buffers = 32MB
fsync = on
logging_collector = off
# (the engine tests count the connections a command makes: one log line each)
log_connections = on
EOF
# Loopback TCP with a password; the socket in DIR trusted (its mode keeps
# others out).
cat >"$dir/data/pg_hba.conf" <<EOF
local all all trust
host all all 127.0.0.1/32 scram-sha-256
EOF
run "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null ||
  { cat "$dir/server.log" >&2; exit 1; }
run "$bin/psql" -h "$dir" -p "$port" -U "$user" -d postgres -qAt -c "CREATE DATABASE cdc_test OWNER $user" >/dev/null
ctl="${as_owner[*]} $bin/pg_ctl -D $dir/data -l $dir/server.log -w -t 60"
cat >"$dir/env" <<EOF
PG_HOST=127.0.0.1
PG_PORT=$port
PG_USER=$user
PG_PASSWORD=$password
PG_DB=cdc_test
PG_SOCKET_DIR=$dir
PG_DATA=$dir/data
PG_CTL_CMD="$ctl"
EOF
chmod 0644 "$dir/env"
t1=$(date +%s.%N)
log "up in $(python3 -c "print(round($t1 - $t0, 1))") s: postgresql://$user@127.0.0.1:$port/cdc_test"
