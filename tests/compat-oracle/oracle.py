#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Cross-checks our compatibility chunkers against their origins on random
files and random valid parameters, beyond the shared vectors: restic's
chunker (bench/peers/restic/main.go -lengths, built by run.sh), borg's (python3 borg.chunker) and casync's
(`casync make`, chunk ends read from the .caibx index).
  oracle.py CDC RESTIC_LENGTHS WORKDIR ROUNDS SEED
Prints one line per round and a summary; exit 1 on any difference."""
import json
import os
import random
import struct
import subprocess
import sys


def ours(cdc, name, path, flags):
    out = subprocess.run([cdc, "chunk", "--json", "--digest", "none", "-a", name, *flags, path],
                         check=True, capture_output=True, text=True).stdout
    return [c["length"] for c in json.loads(out)["chunks"]]


def restic(tool, path, p):
    out = subprocess.run([tool, "-lengths", "-poly", format(p["poly"], "x"), path, str(p["min"]), str(p["max"]),
                          str(p["avg"].bit_length() - 1)], check=True, capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def borg(path, p):
    from borg.chunker import Chunker
    seed = p["seed"] - 2**32 if p["seed"] >= 2**31 else p["seed"]  # borg's own convention for a u32 seed
    exp = lambda v: v.bit_length() - 1
    with open(path, "rb") as f:
        chunker = Chunker(seed, exp(p["min"]), exp(p["max"]), exp(p["avg"]), p["window"])
        return [c.meta["size"] for c in chunker.chunkify(f)]


def casync(path, p, work):
    store, index = os.path.join(work, "store.castr"), os.path.join(work, "out.caibx")
    subprocess.run(["rm", "-rf", store, index], check=True)
    subprocess.run(["casync", f"--store={store}", f"--chunk-size={p['min']}:{p['avg']}:{p['max']}",
                    "--compression=zstd", "make", index, path], check=True, capture_output=True)
    data = open(index, "rb").read()
    ends, pos = [], 48 + 16  # index header, table header
    while pos + 40 <= len(data):
        end, = struct.unpack_from("<Q", data, pos)
        if end == 0:  # the tail: two zero words, then offsets and the marker
            break
        ends.append(end)
        pos += 40
    return [b - a for a, b in zip([0] + ends, ends)]


def pow2(rng, lo, hi):
    return 1 << rng.randint(lo, hi)


def random_case(rng):
    name = rng.choice(["restic-rabin", "borg-buzhash", "casync-buzhash"])
    if name == "restic-rabin":
        mn = rng.choice([64, 65, 100, 512, 1000, 4096, 65536])
        avg = pow2(rng, max(7, mn.bit_length()), 17)
        mx = avg + rng.randint(1, avg * 6)
        poly = rng.choice([0x11b, 0x1002d, 0x83225a8b, 0x1a123aac67ef3, 0x20e7f3380b43fd, 0x3da3358b4dc173])
        p = {"min": mn, "avg": avg, "max": mx, "poly": poly}
        return name, p, ["--min", str(mn), "--avg", str(avg), "--max", str(mx), "--poly", format(poly, "x")]
    if name == "borg-buzhash":
        e_min = rng.randint(6, 14)
        e_avg = rng.randint(e_min + 1, 18)
        e_max = rng.randint(e_avg + 1, 20)
        window = rng.choice([1, 2, 31, 32, 33, 48, 63, 64, 65, 4095, 4096])
        if window + 2**e_min + 1 > 2**e_max:
            window = rng.randint(1, 2**e_max - 2**e_min - 1)
        seed = rng.choice([0, 1, 12345, 2**31 - 1, 2**31, 2**32 - 1, rng.randrange(2**32)])
        p = {"min": 2**e_min, "avg": 2**e_avg, "max": 2**e_max, "window": window, "seed": seed}
        return name, p, ["--min", str(p["min"]), "--avg", str(p["avg"]), "--max", str(p["max"]),
                         "--window", str(window), "--seed", str(seed)]
    mn = rng.choice([64, 100, 1000, 4096, 16384])
    avg = mn + rng.randint(1, 4 * mn + 100000)
    mx = avg + rng.randint(1, 4 * avg)
    p = {"min": mn, "avg": avg, "max": mx}
    return name, p, ["--min", str(mn), "--avg", str(avg), "--max", str(mx)]


def main():
    cdc, restic_tool, work, rounds, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    rng = random.Random(seed)
    bad = 0
    chunks = {}
    for r in range(rounds):
        name, p, flags = random_case(rng)
        spec = f"{rng.choice(['splitmix64', 'text'])}:{rng.randrange(10**6)}:{rng.randint(0, 3 << 20)}"
        path = os.path.join(work, "input.bin")
        if os.path.exists(path):
            os.remove(path)
        subprocess.run([cdc, "gen", spec, "-o", path], check=True, capture_output=True)
        want = (restic(restic_tool, path, p) if name == "restic-rabin" else
                borg(path, p) if name == "borg-buzhash" else casync(path, p, work))
        got = ours(cdc, name, path, flags)
        same = want == got
        bad += not same
        chunks[name] = chunks.get(name, 0) + len(want)
        print(f"{'ok  ' if same else 'DIFF'} {name} {json.dumps(p)} {spec}: {len(want)} chunks"
              + ("" if same else f" (ours {len(got)}; first difference at chunk "
                 f"{next(i for i, (a, b) in enumerate(zip(want + [None], got + [None])) if a != b)})"))
    print(f"{rounds - bad}/{rounds} rounds identical; chunks compared: {json.dumps(chunks)}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
