#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A tree of many small files, for per-file memory: 1,000 directories of 100
files (100 to 3,000 bytes), drawn from 30,000 random blobs, so most files
have duplicates. Deterministic (seeded).

    bench/dupes/make_many.py /tmp/many
"""
import os
import random
import sys


def main() -> None:
    root = sys.argv[1] if len(sys.argv) > 1 else "/tmp/many"
    rng = random.Random(7)
    blobs = [rng.randbytes(rng.randint(100, 3000)) for _ in range(30000)]
    for d in range(1000):
        path = os.path.join(root, f"dir{d:04d}", f"sub{d % 7}")
        os.makedirs(path, exist_ok=True)
        for f in range(100):
            with open(os.path.join(path, f"file_{f:03d}_with_a_longer_name.dat"), "wb") as out:
                out.write(blobs[rng.randrange(len(blobs))])
    print(f"{root}: 100000 files")


if __name__ == "__main__":
    main()
