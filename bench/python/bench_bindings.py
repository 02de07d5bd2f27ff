#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Python package beside the C++ figures, measured side by side in one run
(docs/BENCHMARKS.md, "Python and C bindings"):

  1. chunk() on a bytes object vs `cdc speed` (same name, size and bytes:
     SplitMix64 seed 1), both timed with the calling thread's CPU clock,
     best of --runs; the same with digest="blake3" vs `cdc speed --digest
     blake3`;
  2. two Python threads chunking two buffers vs one thread chunking both
     (wall clock, best of --runs), with buffers of --size (memory bound)
     and with 1 MiB buffers chunked repeatedly, as many bytes (in cache:
     what bounds it is the GIL, not the memory bus).

Linux's autogroup scheduling gives all the threads of one session one share
of the CPU: on a busy machine two threads then get what one gets. Run it in
its own session (setsid) with --autogroup-nice -10 (root) so that the two
threads can have the two cores (the other sessions' work waits meanwhile).

Each round measures everything once, alternating C++ and Python; the ratios
of every round are printed, then their median, min and max (the machine may
be shared: the spread tells how noisy the run was).

  PYTHONPATH=build/python python3 bench/python/bench_bindings.py --cdc build/cdc
"""
import argparse
import json
import statistics
import subprocess
import threading
import time

import cdc_chunkers


def parse_size(text):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.lower().removesuffix("ib").removesuffix("b")
    return int(t[:-1]) * units[t[-1]] if t[-1] in units else int(t)


def cpp_speed(cdc, algorithm, size, runs, digest):
    out = subprocess.run([cdc, "speed", "-a", algorithm, "--size", str(size), "--runs", str(runs),
                          "--digest", digest, "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["results"][0]["mb_s"]


def py_speed(data, algorithm, runs, digest):
    best = float("inf")
    for _ in range(runs):
        t0 = time.thread_time()
        cdc_chunkers.chunk(data, algorithm, digest=digest)
        best = min(best, time.thread_time() - t0)
    return len(data) / 1e6 / best


def threads_speedup(a, b, algorithm, runs, repeat=1):
    def work(buffers):
        for _ in range(repeat):
            for x in buffers:
                cdc_chunkers.chunk(x, algorithm)

    one = two = float("inf")
    cores = 0.0
    for _ in range(runs):
        t0 = time.perf_counter()
        work((a, b))
        one = min(one, time.perf_counter() - t0)
        c0 = time.process_time()
        workers = [threading.Thread(target=work, args=((x,),)) for x in (a, b)]
        t0 = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        wall = time.perf_counter() - t0
        if wall < two:
            two, cores = wall, (time.process_time() - c0) / wall
    return one / two, cores


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cdc", default="build/cdc", help="the cdc tool")
    p.add_argument("--size", default="1GiB", help="buffer size (K, M, G suffixes)")
    p.add_argument("-a", "--algorithms", default="fastcdc-v1.0.0,ultracdc,jc-v1.1.0")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--runs", type=int, default=3, help="best of this many per measure")
    p.add_argument("--threads-only", action="store_true", help="measure 2 (threads) only")
    p.add_argument("--no-threads", action="store_true", help="measure 1 (chunk() vs cdc speed) only")
    p.add_argument("--autogroup-nice", type=int, help="set this process's autogroup nice (see above; root)")
    args = p.parse_args()
    if args.autogroup_nice is not None:
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(args.autogroup_nice))
    size = parse_size(args.size)
    names = args.algorithms.split(",")
    data = cdc_chunkers.generate(f"splitmix64:1:{size}")  # the bytes of cdc speed --data random
    other = cdc_chunkers.generate(f"splitmix64:2:{size}")
    ratios = {}
    for r in range(args.rounds):
        for name in [] if args.threads_only else names:
            for digest in ("none", "blake3"):
                cpp = cpp_speed(args.cdc, name, size, args.runs, digest)
                py = py_speed(data, name, args.runs, None if digest == "none" else digest)
                key = f"chunk() / cdc speed, {name}" + ("" if digest == "none" else ", blake3")
                ratios.setdefault(key, []).append(py / cpp)
                print(f"round {r + 1}: {key}: python {py:.0f} MB/s, C++ {cpp:.0f} MB/s, ratio {py / cpp:.3f}",
                      flush=True)
        small = 1 << 20
        for label, a, b, repeat in [] if args.no_threads else ((args.size, data, other, 1),
                                    ("1MiB", data[:small], other[:small], max(1, size // small))):
            s, cores = threads_speedup(a, b, names[0], args.runs, repeat)
            key = f"2 threads / 1 thread, {names[0]}, {label} buffers"
            ratios.setdefault(key, []).append(s)
            print(f"round {r + 1}: {key}: {s:.2f}x (the two threads had {cores:.2f} cores)", flush=True)
    print(f"\n{args.size} buffers, best of {args.runs} per measure, {args.rounds} rounds:")
    print(f"{'measure':<56} {'median':>7} {'min':>7} {'max':>7}")
    for key, values in ratios.items():
        print(f"{key:<56} {statistics.median(values):7.3f} {min(values):7.3f} {max(values):7.3f}")


if __name__ == "__main__":
    main()
