#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Generates a deterministic directory tree for `cdc bench run`: FILES files
# (default 20000) in directories of 100, sizes drawn from a seeded mix like a
# source/home tree: 80% small (1 KiB..64 KiB, log-uniform), 20% larger
# (64 KiB..4 MiB, log-uniform), pseudo-random content (~3 GB for 20000 files).
#
#   bench/make_tree.sh /tmp/cdc-tree [FILES] [SEED]
#
# Put it under /tmp or a build directory, never in git. An existing tree with
# the same parameters is kept (a stamp file records them).
set -euo pipefail
out=${1:?usage: make_tree.sh DIR [FILES] [SEED]}
files=${2:-20000}
seed=${3:-1}
stamp="${out%/}.make_tree-$files-$seed"  # beside the tree, not in it
if [[ -f "$stamp" ]]; then
  echo "make_tree: $out already holds $files files (seed $seed)" >&2
  exit 0
fi
mkdir -p "$out"
python3 - "$out" "$files" "$seed" <<'PY'
import math, os, random, sys
out, files, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
total = 0
for i in range(files):
    if rng.random() < 0.8:
        size = int(math.exp(rng.uniform(math.log(1024), math.log(65536))))
    else:
        size = int(math.exp(rng.uniform(math.log(65536), math.log(4 << 20))))
    d = os.path.join(out, "d%03d" % (i // 100))
    if i % 100 == 0:
        os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d.bin" % i), "wb") as f:
        f.write(rng.randbytes(size))
    total += size
print(f"make_tree: {files} files, {total / 1e9:.2f} GB in {out}", file=sys.stderr)
PY
touch "$stamp"
