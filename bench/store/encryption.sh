#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Put and get of an encrypted store against an unencrypted one, same data,
# same binary, rounds interleaved (load on a shared machine hits both alike):
# median wall seconds, MB/s, the encrypted/plain ratios, and the stores'
# sizes (packs + index). The key slot is made with CDC_TEST_FAST_KDF=1 so
# that the figures are the data path's: a real slot adds one Argon2id
# (~0.5 s, tuned at init) to every command that opens the store.
#
#   bench/store/encryption.sh PATH CDC [CDC_B]     (PATH: a file)
#
# CDC_B, another build of cdc, adds a third kind in the same rounds: an
# encrypted store put and got by CDC_B (e.g. a build whose records are
# sealed by another AEAD implementation), with its ratios to plain.
#
# ROUNDS (default 3); WORK (default /tmp/cdc-store-enc) holds the stores.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
file=$1
cdc=$2
cdc_b=${3:-}
kinds=(plain encrypted)
[[ -n $cdc_b ]] && kinds+=(encrypted-b)
rounds=${ROUNDS:-3}
work=${WORK:-/tmp/cdc-store-enc}
rm -rf "$work"
mkdir -p "$work"
printf 'bench password' > "$work/pw"
chmod 600 "$work/pw"
export CDC_PASSWORD_FILE="$work/pw" CDC_TEST_FAST_KDF=1
bytes=$(stat -c %s "$file")
results="$work/results.txt"
: > "$results"
timed() {  # kind step command...
  local kind=$1 step=$2
  shift 2
  cat "$file" > /dev/null
  "$here/timed.py" - "$@" > "$work/time" 2> "$work/err" || { echo "$step failed:" >&2; cat "$work/err" >&2; exit 1; }
  read -r wall cpu _ < "$work/time"
  echo "$kind $step $wall $cpu" >> "$results"
}
for ((r = 0; r < rounds; r++)); do
  for kind in "${kinds[@]}"; do
    d="$work/$kind"
    c=$cdc
    [[ $kind == encrypted-b ]] && c=$cdc_b
    rm -rf "$d"
    if [[ $kind == plain ]]; then "$c" store init -q --no-encryption "$d"; else "$c" store init -q "$d"; fi
    timed "$kind" put "$c" store put -q "$d" "$file" --name f
    timed "$kind" get sh -c "'$c' store get -q '$d' f -o - > /dev/null"
    size=$(( $(du -sb "$d/packs" | cut -f1) + $(stat -c %s "$d/index.db") ))
    echo "$kind size $size 0" >> "$results"
  done
done
python3 - "$results" "$bytes" <<'PY'
import statistics, sys
path, nbytes = sys.argv[1], int(sys.argv[2])
rows = {}
for line in open(path):
    kind, step, wall, cpu = line.split()
    rows.setdefault((kind, step), []).append((float(wall), float(cpu)))
med = {k: statistics.median(w for w, _ in v) for k, v in rows.items()}
cpu = {k: statistics.median(c for _, c in v) for k, v in rows.items()}
print(f"{nbytes} bytes, {len(rows[('plain', 'put')])} rounds, medians")
print("| step | plain s | encrypted s | plain MB/s | encrypted MB/s | encrypted/plain throughput | plain CPU s | encrypted CPU s | CPU ratio |")
print("|---|---|---|---|---|---|---|---|---|")
for kind in [k for k in ("encrypted", "encrypted-b") if (k, "put") in rows]:
    if kind != "encrypted":
        print(f"{kind} (CDC_B) against plain (CDC):")
    for step in ("put", "get"):
        p, e = med[("plain", step)], med[(kind, step)]
        pc, ec = cpu[("plain", step)], cpu[(kind, step)]
        print(f"| {step} | {p:.3f} | {e:.3f} | {nbytes / p / 1e6:.0f} | {nbytes / e / 1e6:.0f} | {p / e:.3f} "
              f"| {pc:.3f} | {ec:.3f} | {pc / ec:.3f} |")
    p, e = med[("plain", "size")], med[(kind, "size")]
    print(f"| store size (packs + index) | {int(p)} B | {int(e)} B | | | {e / p:.4f}x | | | |")
PY
