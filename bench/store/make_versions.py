#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A versions corpus for bench/store/run.sh: DAYS daily snapshots of a growing
tree, each as one tar file, generated deterministically from a seed.

    bench/store/make_versions.py OUT_DIR [DAYS] [BASE_MB] [SEED]

Day 1 is a tree of ~BASE_MB of files: 60% text-like (slices of a pool of
generated words: compresses ~3x with zstd), 25% random (incompressible, like
media or compressed archives), 15% "binary" (random words of a small
alphabet with runs: compresses ~2x). Each next day edits 5% of the files
(a few KiB inserted or replaced at random places), deletes 1% and adds new
files worth 4% of the tree. Files get fixed mtimes and the tars are written
with sorted names and numeric owners, so the same arguments give the same
bytes. Keep OUT_DIR under /tmp, never in git.
"""
import os, random, subprocess, sys

out = sys.argv[1]
days = int(sys.argv[2]) if len(sys.argv) > 2 else 10
base_mb = float(sys.argv[3]) if len(sys.argv) > 3 else 300
seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1

stamp = os.path.join(out, f".versions-{days}-{base_mb}-{seed}")
if os.path.exists(stamp):
    print(f"make_versions: {out} already holds this corpus", file=sys.stderr)
    sys.exit(0)
os.makedirs(out, exist_ok=True)
rng = random.Random(seed)

# A pool of text: words drawn with a Zipf-like law, lines of varying length.
words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rng.randint(2, 12))) for _ in range(20000)]
weights = [1.0 / (i + 1) for i in range(len(words))]
pool_parts = []
size = 0
while size < 48 << 20:
    line = " ".join(rng.choices(words, weights, k=rng.randint(3, 16)))
    line = " " * (4 * rng.randint(0, 4)) + line + "\n"
    pool_parts.append(line)
    size += len(line)
pool = "".join(pool_parts).encode()


def text_bytes(n):
    at = rng.randrange(0, len(pool) - n) if n < len(pool) else 0
    return pool[at:at + n]


def binary_bytes(n):
    alphabet = bytes(rng.randrange(256) for _ in range(24))
    parts, total = [], 0
    while total < n:
        if rng.random() < 0.3:
            run = bytes([rng.choice(alphabet)]) * rng.randint(8, 200)
        else:
            run = bytes(rng.choices(alphabet, k=rng.randint(16, 400)))
        parts.append(run)
        total += len(run)
    return b"".join(parts)[:n]


def new_content():
    r = rng.random()
    size = int(2 ** rng.uniform(10, 22.5))  # 1 KiB .. ~6 MiB, log-uniform
    if r < 0.60:
        return text_bytes(size)
    if r < 0.85:
        return rng.randbytes(size)
    return binary_bytes(size)


tree = os.path.join(out, "tree")
files = {}  # relative path -> bytes
counter = 0


def add_files(target_bytes):
    global counter
    added = 0
    while added < target_bytes:
        d = f"dir{rng.randrange(64):02d}/sub{rng.randrange(8)}"
        name = f"{d}/file{counter:06d}.dat"
        counter += 1
        files[name] = new_content()
        added += len(files[name])


def edit(data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(0, max(1, len(data)))
        piece = text_bytes(rng.randint(16, 4096))
        if rng.random() < 0.5:
            data[at:at] = piece
        else:
            data[at:at + len(piece)] = piece
    return bytes(data)


add_files(int(base_mb * 1e6))
for day in range(1, days + 1):
    if day > 1:
        names = sorted(files)
        for name in rng.sample(names, len(names) // 20):
            files[name] = edit(files[name])
        for name in rng.sample(names, len(names) // 100):
            del files[name]
        add_files(int(sum(len(v) for v in files.values()) * 0.04))
    # Write the tree (only what changed) and tar it deterministically.
    wanted = set(files)
    for root, _, fnames in os.walk(tree):
        for f in fnames:
            rel = os.path.relpath(os.path.join(root, f), tree)
            if rel not in wanted:
                os.remove(os.path.join(root, f))
    for name, data in files.items():
        p = os.path.join(tree, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        try:
            with open(p, "rb") as fh:
                same = fh.read() == data
        except FileNotFoundError:
            same = False
        if not same:
            with open(p, "wb") as fh:
                fh.write(data)
        os.utime(p, (1700000000 + day, 1700000000 + day))
    tar = os.path.join(out, f"day{day:02d}.tar")
    subprocess.run(["tar", "--sort=name", "--mtime=@1700000000", "--owner=0", "--group=0", "--numeric-owner",
                    "--format=gnu", "-cf", tar, "-C", tree, "."], check=True)
    print(f"make_versions: {tar}: {len(files)} files, {os.path.getsize(tar) / 1e6:.0f} MB", file=sys.stderr)
open(stamp, "w").close()
