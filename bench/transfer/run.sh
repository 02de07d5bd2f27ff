#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cdc push / pull over loopback, side by side in one run (docs/BENCHMARKS.md,
# "Chunked transfer"):
#   1. new data: `cdc push` into a fresh store vs `cdc store put` of the same
#      file into a fresh store (ROUNDS alternating rounds; CPU of the server
#      read from /proc);
#   2. unchanged data: the same file pushed again under its name (bytes on
#      the wire, MB/s) beside `cdc store put` again, and under another name;
#   3. the versions corpus (bench/store/make_versions.py: 10 daily tars, in
#      order): `cdc push` vs rsync to a local rsync daemon, with and without
#      -z: bytes on the wire for days 2..10 and wall time;
#   4. memory: `cdc bench transfer` (one huge message vs chunks; push and
#      pull of --big), then push and pull of a BIG file of `cdc gen
#      splitmix64` data, each against a fresh server: client peak RSS from
#      /usr/bin/time (%M), server peak from its /proc/PID/status (VmHWM).
#
#   bench/transfer/run.sh [WORK_DIR] [VERSIONS_DIR] [SIZE_MB] [BIG]
#
# WORK_DIR (default /tmp/cdc-transfer-bench) holds the inputs and stores;
# VERSIONS_DIR (default /tmp/cdc-versions) the tars (made if missing, ~3.5
# GB); SIZE_MB (default 1024) the file of steps 1-2 (half text, half random in
# 1 MiB blocks); BIG (default 4G) the file of step 4 (0: skip). Needs rsync
# (scripts/install-deps.sh --peers). Prints markdown tables; the raw figures
# go to WORK_DIR/results.jsonl. STEPS (default "new versions memory") picks
# the steps; ROUNDS (default 3) the rounds of steps 1-2. CPU times are user +
# system of the client (wait4) and of the server (/proc/PID/stat, with its
# reaped children: the rsync daemon forks one per connection).
# VERSIONS_STORE: `cdc store init` options of the versions step's store
# (default: none, the store's defaults; e.g. "--min 1K --avg 4K --max 32K");
# PUSH_OPTS: more `cdc push` options there (e.g. --id-lists).
set -euo pipefail
cd "$(dirname "$0")/../.."
work="${1:-/tmp/cdc-transfer-bench}"
versions="${2:-/tmp/cdc-versions}"
size_mb="${3:-1024}"
big="${4:-4G}"
rounds="${ROUNDS:-3}"
steps=" ${STEPS:-new versions memory} "
has_step() { [[ "$steps" == *" $1 "* ]]; }
cdc="$(realpath "${CDC:-build/cdc}")"
[[ -x "$cdc" ]] || { echo "run.sh: no cdc at $cdc (scripts/build.sh release)" >&2; exit 2; }
command -v rsync >/dev/null || { echo "run.sh: rsync is missing (scripts/install-deps.sh --peers)" >&2; exit 2; }
has_step versions && python3 bench/store/make_versions.py "$versions" 10 300 1
mkdir -p "$work"
results="$work/results.jsonl"
: > "$results"
servers=()
cleanup() { for p in "${servers[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# The file of steps 1-2: deterministic, half text (compresses ~3x), half random.
input="$work/input-${size_mb}M.bin"
if has_step new && [[ ! -s "$input" ]]; then
  python3 - "$input" "$size_mb" <<'EOF'
import random, sys
path, mb = sys.argv[1], int(sys.argv[2])
r = random.Random(7)
words = [bytes(r.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(2, 10))) for _ in range(5000)]
with open(path, "wb") as f:
    for i in range(mb):
        if i % 2 == 0:
            out = bytearray()
            while len(out) < 1 << 20:
                out += b" ".join(r.choices(words, k=12)) + b"\n"
            f.write(out[: 1 << 20])
        else:
            f.write(r.randbytes(1 << 20))
EOF
fi

# user + system CPU of a process and its reaped children (the name has no space).
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15 + $16 + $17) / hz }' "/proc/$1/stat"; }
peak_kb_of() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
# serve STORE: starts cdc serve on a free port; sets $port and $server.
serve() {
  rm -f "$work/port"
  "$cdc" serve --store "$1" --listen 127.0.0.1:0 --port-file "$work/port" -q &
  server=$!
  servers+=("$server")
  while [[ ! -s "$work/port" ]]; do sleep 0.05; done
  port=$(cat "$work/port")
}
stop() { kill "$server"; wait "$server" 2>/dev/null || true; }
# timed STEP KIND command...: wall, client CPU, peak RSS; appends a JSON line (+ the command's JSON output).
timed() {
  local step=$1 kind=$2
  shift 2
  local s0=""
  # No step pays for the previous one's dirty pages (rsync writes each
  # version whole: ~400 MB to flush while the next step runs and fsyncs).
  sync
  [[ -n "${server:-}" ]] && kill -0 "$server" 2>/dev/null && s0=$(cpu_of "$server")
  /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$@" > "$work/out" 2> "$work/err" \
    || { echo "run.sh: $step failed:" >&2; cat "$work/err" >&2; exit 1; }
  local wall user sys rss scpu=0
  read -r wall user sys rss < "$work/time"
  # A daemon reaps its forked child asynchronously: give it a moment.
  [[ -n "$s0" && "$kind" == rsync* ]] && sleep 0.3
  [[ -n "$s0" ]] && scpu=$(awk -v a="$(cpu_of "$server")" -v b="$s0" 'BEGIN { printf "%.2f", a - b }')
  local out
  out=$(tr -d '\n' < "$work/out")
  [[ "$out" == \{* ]] || out='{}'
  printf '{"step":"%s","kind":"%s","wall":%s,"cpu":%s,"server_cpu":%s,"rss_kb":%s,"report":%s}\n' \
    "$step" "$kind" "$wall" "$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')" "$scpu" "$rss" "$out" >> "$results"
}

size=0
if has_step new; then
cat "$input" > /dev/null  # warm page cache
size=$(stat -c %s "$input")

# ---- 1 + 2: new and unchanged data
for r in $(seq "$rounds"); do
  rm -rf "$work/local" "$work/remote"
  "$cdc" store init --no-encryption "$work/local" > /dev/null
  "$cdc" store init --no-encryption "$work/remote" > /dev/null
  server=""
  timed "new" "store put" "$cdc" store put "$work/local" "$input" --name f --json -q
  serve "$work/remote"
  timed "new" "push" "$cdc" push --to "127.0.0.1:$port" "$input" --name f --json -q
  timed "unchanged" "push (same name)" "$cdc" push --to "127.0.0.1:$port" "$input" --name f --json -q
  timed "unchanged" "push (other name)" "$cdc" push --to "127.0.0.1:$port" "$input" --name g --json -q
  timed "pull" "pull" "$cdc" pull --from "127.0.0.1:$port" f -o "$work/pulled" --json -q
  timed "pull" "pull (OUT exists)" "$cdc" pull --from "127.0.0.1:$port" f -o "$work/pulled" --json -q
  stop
  server=""
  timed "unchanged" "store put" "$cdc" store put "$work/local" "$input" --name f --json -q
  timed "pull" "store get" "$cdc" store get "$work/local" f -o "$work/got" -q
  rm -f "$work/pulled" "$work/got"
done
fi

# ---- 3: the versions corpus, pushed in order vs rsync to a daemon
if has_step versions; then
cat "$versions"/day*.tar > /dev/null  # warm page cache
rm -rf "$work/vstore" "$work/rsync" "$work/rsync-z"
"$cdc" store init --no-encryption "$work/vstore" ${VERSIONS_STORE:-} > /dev/null
mkdir -p "$work/rsync/plain" "$work/rsync/z"
rport=$((20000 + RANDOM % 20000))
cat > "$work/rsyncd.conf" <<EOF
port = $rport
use chroot = false
uid = $(id -u)
gid = $(id -g)
[plain]
  path = $work/rsync/plain
  read only = false
[z]
  path = $work/rsync/z
  read only = false
EOF
rsync --daemon --no-detach --config="$work/rsyncd.conf" --log-file="$work/rsyncd.log" &
rsyncd=$!
servers+=("$rsyncd")
sleep 1
serve "$work/vstore"
vserver=$server
for tar in "$versions"/day*.tar; do
  day=$(basename "$tar" .tar)
  server=$vserver
  timed "versions:$day" "push" "$cdc" push --to "127.0.0.1:$port" "$tar" --name current.tar --json -q ${PUSH_OPTS:-}
  server=$rsyncd
  timed "versions:$day" "rsync" rsync --stats "$tar" "rsync://127.0.0.1:$rport/plain/current.tar"
  grep -E "Total bytes (sent|received)" "$work/out" | awk -v d="$day" '{ gsub(",", "", $4); gsub(":", "", $3); printf "{\"step\":\"versions:%s\",\"kind\":\"rsync bytes\",\"%s\":%s}\n", d, $3, $4 }' >> "$results"
  timed "versions:$day" "rsync -z" rsync -z --stats "$tar" "rsync://127.0.0.1:$rport/z/current.tar"
  grep -E "Total bytes (sent|received)" "$work/out" | awk -v d="$day" '{ gsub(",", "", $4); gsub(":", "", $3); printf "{\"step\":\"versions:%s\",\"kind\":\"rsync -z bytes\",\"%s\":%s}\n", d, $3, $4 }' >> "$results"
done
server=$vserver
stop
kill "$rsyncd"; wait "$rsyncd" 2>/dev/null || true
rm -rf "$work/vstore" "$work/rsync"
fi

# ---- 4: memory
if has_step memory && [[ "$big" != "0" ]]; then
  "$cdc" bench transfer --size 200M --big "$big" --dir "$work/bench" --json --plot "$work" > "$work/bench-transfer.json"
  rm -rf "$work/bench"
  # The same with /usr/bin/time and VmHWM, on splitmix64 data (incompressible).
  bigfile="$work/big.bin"
  rm -f "$bigfile"
  "$cdc" gen "splitmix64:1:$(numfmt --from=iec "$big")" -o "$bigfile"
  bigsize=$(stat -c %s "$bigfile")
  rm -rf "$work/bigstore" "$work/big-pulled"
  "$cdc" store init --no-encryption "$work/bigstore" > /dev/null
  serve "$work/bigstore"
  timed "big" "push" "$cdc" push --to "127.0.0.1:$port" "$bigfile" --name big --json -q
  echo "{\"step\":\"big\",\"kind\":\"push server\",\"bytes\":$bigsize,\"server_rss_kb\":$(peak_kb_of "$server")}" >> "$results"
  stop
  serve "$work/bigstore"
  timed "big" "pull" "$cdc" pull --from "127.0.0.1:$port" big -o "$work/big-pulled" --json -q
  echo "{\"step\":\"big\",\"kind\":\"pull server\",\"bytes\":$bigsize,\"server_rss_kb\":$(peak_kb_of "$server")}" >> "$results"
  stop
  cmp "$bigfile" "$work/big-pulled" || { echo "run.sh: the pulled $big file differs" >&2; exit 1; }
  rm -rf "$bigfile" "$work/big-pulled" "$work/bigstore"
else
  echo '{"runs":[]}' > "$work/bench-transfer.json"
fi

python3 bench/transfer/table.py "$results" "$size" "$work/bench-transfer.json"
