#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Ten daily states of one tree, for the snapshot benchmark (ten_days.sh).

    bench/store/make_tree_days.py OUT [--days 10] [--files 25000] [--change 0.015] [--seed 1]

OUT/day01 is a generated tree (~25k files, ~550 MB: many small files and a
few large ones, text-like and random contents, symlinks (some dangling),
hard links, empty directories, fixed mtimes); OUT/dayNN is day NN-1 with
about --change of its files changed: edited (bytes overwritten or inserted,
new mtime), added, deleted or renamed. A day is a hard-linked copy of the
day before (cp -al) whose changed files are new inodes, so ten days take
little more room than one. The same seed gives the same bytes, names and
times. A finished OUT (OUT/.complete naming the arguments) is reused.
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np

BASE_TIME = 1_767_225_600  # 2026-01-01 UTC: day 1's files are older than it
DAY = 86_400


def size_for(rng):
    r = rng.random()
    if r < 0.70:
        return int(rng.integers(512, 8 << 10))
    if r < 0.95:
        return int(rng.integers(8 << 10, 64 << 10))
    if r < 0.997:
        return int(rng.integers(64 << 10, 256 << 10))
    return int(rng.integers(256 << 10, 2 << 20))


# Text-like bytes: a skewed alphabet (zstd makes about half of them), unique
# per file, so that the tools' dedup comes from the days, not from copies.
ALPHABET = np.frombuffer(b"etaoinshrdlucmfwypvbgkjqxz ETAOIN\n.,;:0123", dtype=np.uint8)
WEIGHTS = 1.0 / np.arange(1, len(ALPHABET) + 1)
WEIGHTS /= WEIGHTS.sum()


def content(rng, n):
    if rng.random() < 0.6:
        return ALPHABET[rng.choice(len(ALPHABET), size=n, p=WEIGHTS)].tobytes()
    return rng.bytes(n)


def write(path, data, mtime):
    tmp = path + ".tmp-make"
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, path)  # a new inode: the day before keeps its file
    os.utime(path, (mtime, mtime), follow_symlinks=False)


def make_day1(root, files, rng):
    dirs = [""]
    for i in range(max(1, files // 16)):
        parent = dirs[int(rng.integers(0, len(dirs)))]
        if parent.count("/") >= 4:
            parent = ""
        d = os.path.join(parent, f"d{i:04d}")
        os.makedirs(os.path.join(root, d))
        dirs.append(d)
    names = []
    for i in range(files):
        d = dirs[int(rng.integers(0, len(dirs)))]
        name = os.path.join(d, f"f{i:05d}.{'txt' if i % 3 else 'bin'}")
        write(os.path.join(root, name), content(rng, size_for(rng)),
              BASE_TIME - int(rng.integers(DAY, 400 * DAY)))
        names.append(name)
    for i in range(files // 100):  # symlinks: relative, a tenth of them dangling
        d = dirs[int(rng.integers(0, len(dirs)))]
        target = names[int(rng.integers(0, len(names)))]
        rel = os.path.relpath(target, d or ".") if i % 10 else f"missing-{i}"
        os.symlink(rel, os.path.join(root, d, f"l{i:05d}"))
    for i in range(files // 500):  # hard links beside their file
        src = names[int(rng.integers(0, len(names)))]
        os.link(os.path.join(root, src), os.path.join(root, src + f".hl{i}"))
    for i in range(files // 250):  # empty directories
        d = dirs[int(rng.integers(0, len(dirs)))]
        os.makedirs(os.path.join(root, d, f"empty{i:04d}"), exist_ok=True)
    for d in reversed(dirs):
        os.utime(os.path.join(root, d), (BASE_TIME, BASE_TIME))


def regular_files(root):
    out = []
    for dirpath, _, filenames in os.walk(root):
        for f in filenames:
            p = os.path.join(dirpath, f)
            st = os.lstat(p)
            # the tree's own hard links are left alone (an edit would split them)
            if os.path.isfile(p) and not os.path.islink(p) and ".hl" not in f and st.st_size > 0:
                out.append(os.path.relpath(p, root))
    out.sort()
    return out


def change_day(root, day, change, rng):
    files = regular_files(root)
    linked = {os.path.relpath(os.path.join(dp, f), root).split(".hl")[0]
              for dp, _, fs in os.walk(root) for f in fs if ".hl" in f}
    files = [f for f in files if f not in linked]
    n = max(1, int(len(files) * change))
    picked = rng.choice(len(files), size=n, replace=False)
    mtime = BASE_TIME + day * DAY
    counts = {"edited": 0, "added": 0, "deleted": 0, "renamed": 0}
    for k, idx in enumerate(picked):
        rel = files[int(idx)]
        p = os.path.join(root, rel)
        r = k % 20
        if r < 12:  # edit: overwrite a block, or insert one
            data = bytearray(open(p, "rb").read())
            at = int(rng.integers(0, len(data)))
            block = content(rng, int(rng.integers(16, 4096)))
            if r % 2:
                data[at:at + len(block)] = block
            else:
                data[at:at] = block
            write(p, bytes(data), mtime)
            counts["edited"] += 1
        elif r < 16:
            write(os.path.join(os.path.dirname(p), f"new{day:02d}-{k:05d}.txt"),
                  content(rng, size_for(rng)), mtime)
            counts["added"] += 1
        elif r < 19:
            os.unlink(p)
            counts["deleted"] += 1
        else:
            os.rename(p, p + f".r{day:02d}")
            counts["renamed"] += 1
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--days", type=int, default=10)
    ap.add_argument("--files", type=int, default=25000)
    ap.add_argument("--change", type=float, default=0.015)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    stamp = f"days={a.days} files={a.files} change={a.change} seed={a.seed}\n"
    done = os.path.join(a.out, ".complete")
    if os.path.exists(done) and open(done).read() == stamp:
        print(f"make_tree_days: {a.out} is complete ({stamp.strip()})")
        return
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    rng = np.random.default_rng(a.seed)
    day1 = os.path.join(a.out, "day01")
    os.makedirs(day1)
    make_day1(day1, a.files, rng)
    print(f"make_tree_days: day01: {len(regular_files(day1))} files", file=sys.stderr)
    for day in range(2, a.days + 1):
        prev, cur = os.path.join(a.out, f"day{day - 1:02d}"), os.path.join(a.out, f"day{day:02d}")
        subprocess.run(["cp", "-al", prev, cur], check=True)
        counts = change_day(cur, day, a.change, rng)
        print(f"make_tree_days: day{day:02d}: {counts}", file=sys.stderr)
    with open(done, "w") as f:
        f.write(stamp)


if __name__ == "__main__":
    main()
