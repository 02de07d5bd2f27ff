#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs every Debian package the project needs to build, test and plot.
# Idempotent: packages already present are not reinstalled; apt-get update runs
# only when something is missing. Needs root (or sudo) when it has to install.
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config
  clang libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev
  librust-blake3-dev libssl-dev libxxhash-dev
  libzstd-dev libsqlite3-dev  # cdc store: chunk compression, index and manifests
  libsodium-dev  # cdc store: encryption at rest (Argon2id, XChaCha20-Poly1305)
  libcurl4-openssl-dev  # cdc store: packs in S3 (the cdc-store-s3 helper)
  libpq-dev  # cdc store: a PostgreSQL catalog (the cdc-store-s3 helper)
  postgresql-15  # the engine tests' private PostgreSQL cluster (tests/engines/postgres.sh)
  ceph-mon ceph-osd radosgw ceph-common  # the engine tests' one-node Ceph RGW (tests/engines/ceph.sh)
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc  # cdc serve/push/pull (the cdc-transfer helper)
  openssl  # the transfer tests make a self-signed TLS certificate
  libplplot-dev plplot-driver-cairo libpng-dev  # (libpng: a test reads the pixels of a chart)
  python3-dev python3-pybind11 pybind11-dev python3-numpy python3-pytest  # the Python package
  python3-pip python3-venv python3-setuptools python3-wheel  # pip install of it (offline)
  python3-distributed  # cdc_chunkers.distributed (Dask) and its tests
  xfsprogs  # the reflink test formats a loop-mounted XFS image
  groff-base man-db zsh fish  # the man pages and the shell completions are checked in each shell
)
# Optional groups: peers for benchmarks (bench/peers) and duplicate finders.
if [[ "${1:-}" == "--peers" ]]; then
  PKGS+=(golang-go golang-github-restic-chunker-dev golang-lukechampine-blake3-dev python3 borgbackup restic casync time b3sum xxhash rsync fdupes jdupes rdfind rmlint hyperfine)
fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
