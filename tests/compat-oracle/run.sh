#!/usr/bin/env bash
# Cross-checks restic-rabin, borg-buzhash and casync-buzhash against their
# origins (Debian packages; never linked, never needed by CI) on random files
# and random valid parameters, beyond shared/testvectors/compat:
#   tests/compat-oracle/run.sh [ROUNDS] [SEED]     (default 60 rounds, seed 1)
# needs a built cdc (CDC=path, default build/cdc). Exit 1 on any difference.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-60}"
seed="${2:-1}"
cdc="$(realpath "${CDC:-build/cdc}")"
[[ -x "$cdc" ]] || { echo "run.sh: no cdc at $cdc (scripts/build.sh release, or set CDC=...)" >&2; exit 2; }
scripts/install-deps.sh --peers
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/gopath/src/resticlengths"
cp tests/compat-oracle/restic/main.go "$work/gopath/src/resticlengths/"
GOPATH="$work/gopath:/usr/share/gocode" GO111MODULE=off GOCACHE="$work/gocache" GOFLAGS= \
  go build -o "$work/restic-lengths" resticlengths
/usr/bin/python3 tests/compat-oracle/oracle.py "$cdc" "$work/restic-lengths" "$work" "$rounds" "$seed"
