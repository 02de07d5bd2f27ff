#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Chunks one file, held in memory, with borg's buzhash chunker (Debian's
borgbackup, its C extension) and prints one JSON line: the MB/s of the
chunking loop alone and the chunk count. Written for bench/peers.
  borg_chunker.py FILE MIN_EXP MAX_EXP MASK_BITS WINDOW
"""
import io
import json
import sys
import time

from borg.chunker import Chunker


def main():
    path, min_exp, max_exp, mask_bits, window = sys.argv[1], *map(int, sys.argv[2:6])
    with open(path, "rb") as f:
        data = f.read()
    chunker = Chunker(0, min_exp, max_exp, mask_bits, window)
    start = time.process_time()
    chunks = 0
    for _ in chunker.chunkify(io.BytesIO(data)):
        chunks += 1
    secs = time.process_time() - start
    print(json.dumps({"peer": "borg-buzhash", "mb_s": round(len(data) / 1e6 / secs, 1), "chunks": chunks}))


if __name__ == "__main__":
    main()
