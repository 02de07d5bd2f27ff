# SPDX-License-Identifier: Apache-2.0
# Sourced by the peer harnesses (bench/peers/run.sh, compat.sh,
# tests/compat-oracle/run.sh), from the project root:
#   peers_setup NAME      checks $CDC (default build/cdc) and sets `cdc` to
#                         its absolute path, installs the peers, makes a work
#                         folder `work` removed on exit
#   build_restic_peer     builds bench/peers/restic/main.go against Debian's
#                         restic chunker source into $work/restic-chunker
peers_setup() {
  cdc="$(realpath "${CDC:-build/cdc}")"
  [[ -x "$cdc" ]] || { echo "$1: no cdc at $cdc (scripts/build.sh release, or set CDC=...)" >&2; exit 2; }
  scripts/install-deps.sh --peers
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
}

build_restic_peer() {
  mkdir -p "$work/gopath/src/resticpeer"
  cp bench/peers/restic/main.go "$work/gopath/src/resticpeer/"
  GOPATH="$work/gopath:/usr/share/gocode" GO111MODULE=off GOCACHE="$work/gocache" GOFLAGS= \
    go build -o "$work/restic-chunker" resticpeer
}
