#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Normalises the output of a duplicate finder to duplicate sets of inodes.

usage: sets.py FORMAT FILE    FORMAT: cdc-json | fdupes (fdupes, jdupes,
rmlint -o fdupes: groups separated by blank lines) | rdfind (results.txt)
Prints one line per set: the sorted (device:inode) list of the set.

Hard-link semantics differ between the tools: cdc lists one path per inode
and reports the other paths as "linked"; fdupes and jdupes leave hard links
out of a group unless -H; rdfind drops paths of an inode already seen
(-removeidentinode true); rmlint lists every hard link in the group. Mapping
each path to its inode and dropping sets of fewer than two inodes makes the
outputs comparable: a set is the files that hold the same bytes in separate
storage.
"""
import json
import os
import sys


def groups(fmt, path):
    if fmt == "cdc-json":
        with open(path) as f:
            return [g["files"] for g in json.load(f)["groups"]]
    if fmt == "fdupes":
        out, cur = [], []
        with open(path, errors="surrogateescape") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line:
                    if cur:
                        out.append(cur)
                    cur = []
                else:
                    cur.append(line)
        if cur:
            out.append(cur)
        return out
    if fmt == "rdfind":
        by_id = {}
        with open(path, errors="surrogateescape") as f:
            for line in f:
                if line.startswith("#"):
                    continue
                parts = line.rstrip("\n").split(" ", 7)
                by_id.setdefault(abs(int(parts[1])), []).append(parts[7])
        return list(by_id.values())
    raise SystemExit(f"unknown format {fmt}")


def main():
    fmt, path = sys.argv[1], sys.argv[2]
    sets = set()
    for g in groups(fmt, path):
        inodes = set()
        for p in g:
            st = os.stat(p)
            inodes.add(f"{st.st_dev}:{st.st_ino}")
        if len(inodes) >= 2:
            sets.add(" ".join(sorted(inodes)))
    for s in sorted(sets):
        print(s)


if __name__ == "__main__":
    main()
