#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cross-checks restic-rabin, borg-buzhash and casync-buzhash against their
# origins (Debian packages; never linked, never needed by CI) on random files
# and random valid parameters, beyond tests/vectors/compat:
#   tests/compat-oracle/run.sh [ROUNDS] [SEED]     (default 60 rounds, seed 1)
# needs a built cdc (CDC=path, default build/cdc). Exit 1 on any difference.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-60}"
seed="${2:-1}"
source bench/peers/common.sh
peers_setup compat-oracle/run.sh
build_restic_peer
/usr/bin/python3 tests/compat-oracle/oracle.py "$cdc" "$work/restic-chunker" "$work" "$rounds" "$seed"
