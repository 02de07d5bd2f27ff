#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Builds the duplicate-finder benchmark corpus (deterministic, seed 42).

  backups/dayNN/   a home directory copied once a day WITHOUT hard links
                   (rsync without -H); each day ~2% of the files change: half
                   edited in place (same size, one byte in the middle), half
                   rewritten with a new size; a few files appear.
  images/YYYY/MM/DD/IMG_NNNN.jpg   a photo library imported by date (bursts
                   of equal-size photos that differ), and copies of many of
                   them in projects/YYYY-MM-DD_name/ (some in two projects).
  records/         fixed-size files (64 KiB) with distinct contents: same
                   size, never duplicates.
  linked/day01/    a hard-linked copy of backups/day01 (cp -al): paths that
                   share an inode, no waste.

usage: make_corpus.py DIR [--scale S]   (S=1: about 1.2 GB)
"""
import os
import random
import shutil
import subprocess
import sys


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    root = sys.argv[1]
    scale = float(sys.argv[sys.argv.index("--scale") + 1]) if "--scale" in sys.argv else 1.0
    rng = random.Random(42)
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(root)

    def write(path, data):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)

    def size_of_home_file():
        r = rng.random()
        if r < 0.70:
            return rng.randint(200, 40_000)        # documents, sources, configs
        if r < 0.95:
            return rng.randint(40_000, 1_000_000)  # pdfs, spreadsheets
        return rng.randint(1_000_000, 8_000_000)   # archives, media

    # The home directory (day 01).
    home = {}
    nfiles = int(700 * scale)
    for i in range(nfiles):
        d = f"{['Documents', 'bin', 'src', 'Music', 'notes'][i % 5]}/{['a', 'b', 'c', 'd'][rng.randrange(4)]}"
        home[f"{d}/file{i:05}.dat"] = rng.randbytes(size_of_home_file())
    days = 6
    for day in range(1, days + 1):
        if day > 1:
            names = sorted(home)
            for name in rng.sample(names, max(1, len(names) // 50)):
                data = bytearray(home[name])
                if rng.random() < 0.5 and data:
                    data[len(data) // 2] ^= 0xFF  # same size, differs in the middle
                else:
                    data += rng.randbytes(rng.randint(1, 5000))
                home[name] = bytes(data)
            for k in range(5):
                home[f"new/day{day:02}_{k}.dat"] = rng.randbytes(size_of_home_file())
        for name, data in home.items():
            write(os.path.join(root, "backups", f"day{day:02}", name), data)

    # The image library and the project folders.
    photos = []
    nphotos = int(140 * scale)
    for i in range(nphotos):
        y, m, dd = 2018 + i // 60, 1 + (i // 10) % 12, 1 + i % 28
        size = rng.randint(1_500_000, 4_000_000)
        burst = 1 + (rng.random() < 0.2) * 2  # some bursts of 3 equal-size shots
        for b in range(burst):
            data = bytearray(rng.randbytes(size)) if b == 0 else bytearray(photos[-1][1])
            if b:
                data[rng.randrange(len(data))] ^= 0x55  # same size, one byte differs
            path = os.path.join(root, "images", f"{y}", f"{m:02}", f"{dd:02}", f"IMG_{i:04}_{b}.jpg")
            write(path, bytes(data))
            photos.append((path, bytes(data), (y, m, dd)))
    for path, data, (y, m, dd) in photos:
        copies = 1 if rng.random() < 0.6 else (2 if rng.random() < 0.3 else 0)
        for c in range(copies):
            proj = f"{y}-{m:02}-{dd:02}_{['Wedding', 'Trip', 'Garden', 'Portraits'][c + rng.randrange(2)]}"
            write(os.path.join(root, "projects", proj, os.path.basename(path)), data)

    # Same size, all different.
    for i in range(int(300 * scale)):
        write(os.path.join(root, "records", f"rec{i:04}.bin"), rng.randbytes(65536))

    # A hard-linked subtree.
    os.makedirs(os.path.join(root, "linked"))
    subprocess.run(["cp", "-al", os.path.join(root, "backups", "day01"), os.path.join(root, "linked", "day01")],
                   check=True)


if __name__ == "__main__":
    main()
