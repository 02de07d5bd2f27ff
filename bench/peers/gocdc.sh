#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Go reference side by side with cdc on the same bytes: go-cdc-chunkers
# (whose cut points the go-cdc-chunkers names of cdc reproduce) built from a
# checkout of its source with Debian's Go, and `cdc speed`, in alternating
# rounds; prints each algorithm's MB/s (median of the rounds; each round the
# best of 3 runs), the chunk counts (equal: the same cut points) and the
# ratio cdc / Go. MB = 10^6 bytes; every figure is CPU time.
#   GOCDC_SRC=path/to/go-cdc-chunkers bench/peers/gocdc.sh [SIZE_MIB] [ROUNDS]
#   (defaults 128 and 3; needs a built cdc: CDC=path/to/cdc, default build/cdc;
#   CDC_SPEED_ARGS adds options to cdc speed, e.g. "--kernel wide"; PAGES=small
#   puts both sides' in-memory copies in 4 KiB pages instead of huge ones)
# The library's own go.mod asks for a newer Go than Debian 12's 1.19, so the
# checkout is built in a throwaway GOPATH with its two newer constructs
# rewritten (`for i := range 256`, the min builtin) and its BLAKE3 import
# (zeebo/blake3, keyed tables only) served by a shim over Debian's
# lukechampine.com/blake3 (bench/peers/gocdc/blake3_shim.go.in). Nothing of
# the library is kept in this repository.
set -euo pipefail
cd "$(dirname "$0")/../.."
size_mib="${1:-128}"
rounds="${2:-3}"
src="${GOCDC_SRC:?set GOCDC_SRC to a checkout of go-cdc-chunkers}"
[[ -f "$src/chunkers.go" ]] || { echo "gocdc.sh: $src is not a go-cdc-chunkers checkout" >&2; exit 2; }
source bench/peers/common.sh
peers_setup gocdc.sh
algorithms="fastcdc,kfastcdc,fastcdc-v1.0.0,jc,jc-v1.1.0,fastcdc4stadia,ultracdc"
key=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
pages="${PAGES:-huge}"
[[ "$pages" == huge || "$pages" == small ]] || { echo "gocdc.sh: PAGES must be huge or small" >&2; exit 2; }

lib="$work/gopath/src/github.com/PlakarKorp/go-cdc-chunkers"
mkdir -p "$lib" "$work/gopath/src/github.com/zeebo/blake3" "$work/gopath/src/gocdcbench"
cp "$src"/*.go "$lib/"
for d in fastcdc fastcdc4stadia jc ultracdc; do
  mkdir -p "$lib/chunkers/$d"
  cp "$src/chunkers/$d"/*.go "$lib/chunkers/$d/"
done
rm -f "$lib"/*_test.go "$lib"/chunkers/*/*_test.go
# Go 1.22's integer range and 1.21's min builtin, for an older toolchain.
sed -i -E 's/for ([a-z]+) := range ([0-9]+) \{/for \1 := 0; \1 < \2; \1++ {/' "$lib"/chunkers/*/*.go
if ! grep -q 'go1\.\(2[1-9]\|[3-9][0-9]\)' <(go version); then
  for f in "$lib"/chunkers/*/*.go; do
    if grep -q '[^.a-zA-Z]min(' "$f" && ! grep -q '^func min(' "$lib/chunkers/$(basename "$(dirname "$f")")"/*.go; then
      printf '\nfunc min(a, b int) int {\n\tif a < b {\n\t\treturn a\n\t}\n\treturn b\n}\n' >> "$f"
    fi
  done
fi
cp bench/peers/gocdc/blake3_shim.go.in "$work/gopath/src/github.com/zeebo/blake3/blake3.go"
cp bench/peers/gocdc/main.go "$work/gopath/src/gocdcbench/"
GOPATH="$work/gopath:/usr/share/gocode" GO111MODULE=off GOCACHE="$work/gocache" GOFLAGS= \
  go build -o "$work/gocdc-bench" gocdcbench

data="$work/random.bin"
# The same bytes as `cdc speed --data random` (SplitMix64, seed 1).
"$cdc" gen "splitmix64:1:$((size_mib * 1048576))" -o "$data"
results="$work/results.jsonl"
to_rows='import json,sys; d=json.load(sys.stdin)
for r in d["results"]: print(json.dumps({"who":"cdc","algorithm":r["algorithm"],"mb_s":r["mb_s"],"chunks":r["chunks"],"kernel":r["kernel"]}))
print(json.dumps({"who":"memory-read","algorithm":"-","mb_s":d["baseline_mb_s"]}))'
for ((r = 1; r <= rounds; r++)); do
  # (a key makes every Gear name keyed: kfastcdc alone gets one, as in the Go program)
  # shellcheck disable=SC2086
  "$cdc" speed --json --size "${size_mib}MiB" --runs 3 --pages "$pages" -a "${algorithms/kfastcdc,/}" ${CDC_SPEED_ARGS:-} \
    | python3 -c "$to_rows" >> "$results"
  # shellcheck disable=SC2086
  "$cdc" speed --json --size "${size_mib}MiB" --runs 3 --pages "$pages" --key "$key" -a kfastcdc ${CDC_SPEED_ARGS:-} \
    | python3 -c "$to_rows" >> "$results"
  "$work/gocdc-bench" -runs 3 -key "$key" -pages "$pages" "$data" ${algorithms//,/ } \
    | python3 -c 'import json,sys
for l in sys.stdin: r=json.loads(l); r["who"]="go"; print(json.dumps(r))' >> "$results"
done

python3 - "$results" "$size_mib" "$rounds" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def med(who, a):
    v = [r["mb_s"] for r in rows if r["who"] == who and r["algorithm"] == a]
    return statistics.median(v), min(v), max(v)
names = [r["algorithm"] for r in rows if r["who"] == "go"]
names = list(dict.fromkeys(names))
m = med("memory-read", "-")
print(f"{sys.argv[2]} MiB of random bytes in memory, default profiles, {sys.argv[3]} rounds (cdc and Go alternating),")
print(f"median (min-max) MB/s of the rounds, each the best of 3 runs; memory read {m[0]:.0f} MB/s")
print(f"{'algorithm':<16} {'kernel':<11} {'cdc MB/s':>20} {'Go MB/s':>20} {'cdc/Go':>7} {'chunks':>8} {'same':>5}")
for a in names:
    c, g = med("cdc", a), med("go", a)
    kern = sorted({r["kernel"] for r in rows if r["who"] == "cdc" and r["algorithm"] == a})
    cc = {r["chunks"] for r in rows if r["who"] == "cdc" and r["algorithm"] == a}
    gc = {r["chunks"] for r in rows if r["who"] == "go" and r["algorithm"] == a}
    print(f"{a:<16} {'/'.join(kern):<11} {c[0]:>7.0f} ({c[1]:.0f}-{c[2]:.0f}) {g[0]:>7.0f} ({g[1]:.0f}-{g[2]:.0f}) "
          f"{c[0] / g[0]:>6.2f}x {min(cc):>8} {'yes' if cc == gc else 'NO':>5}")
PY
