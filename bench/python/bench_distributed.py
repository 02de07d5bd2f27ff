#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""cdc_chunkers.distributed against its targets (docs/BENCHMARKS.md,
"Python: cdc_chunkers.distributed"), on LocalClusters of this machine:

  equal     exact mode vs `cdc analyze --json` (-a all with a key: every
            algorithm name) on each --tree: chunks, distinct chunks and
            bytes, size statistics, files, bytes, errors must be equal.
  scale     throughput (bytes / wall time of the analyze call, the cluster
            already started) of 1 worker, 2 workers (one thread each) and
            `cdc analyze -j 1`, alternated for --rounds rounds (medians),
            on --scale-tree; the workers' peak RSS for it and for half of
            it (memory that grows with the corpus shows there).
  sketch    sketch mode at the default precision and sample, --seeds seeds,
            on --sketch-tree (it must hold many more distinct chunks than
            the sample): each seed's error on distinct chunks and bytes
            against exact mode, the stated standard errors, and the bytes
            the shards shipped per worker.

  PYTHONPATH=build/python /usr/bin/python3 bench/python/bench_distributed.py --cdc build/cdc \\
      --tree /tmp/sample --tree /usr/share/doc --scale-tree /tmp/sample --sketch-tree /tmp/sk
"""
import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import time

import dask
import distributed

import cdc_chunkers.distributed as cdd

KEY = "01" * 32
VOLATILE = {"chunk_mb_s", "wall_mb_s", "cut_seconds", "hash_seconds", "wall_seconds", "jobs", "buffer_bytes",
            "index_bytes", "index_bytes_per_distinct_chunk", "distributed"}


def figures(doc):
    if isinstance(doc, dict):
        return {k: figures(v) for k, v in doc.items() if k not in VOLATILE}
    if isinstance(doc, list):
        return [figures(v) for v in doc]
    return doc


def cluster(n, profile=True):
    # (Dask's statistical profiler samples each worker's threads every 10
    # ms: half of an idle worker's CPU time; a cluster's setting)
    with dask.config.set({"distributed.worker.profile.enabled": profile}):
        c = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                     silence_logs=50)
    return c, distributed.Client(c)


def cdc_analyze(cdc, args):
    t = time.monotonic()
    out = subprocess.run([cdc, "analyze", "--json", "-q", *args], capture_output=True, text=True)
    assert out.returncode in (0, 3), out.stderr
    return json.loads(out.stdout), time.monotonic() - t


def peak_rss(client):
    return client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def equal(args):
    c, client = cluster(2)
    try:
        for tree in args.tree:
            want, t_cdc = cdc_analyze(args.cdc, ["-a", "all", "--key", KEY, "-j", "2", tree])
            t = time.monotonic()
            got = cdd.analyze(tree, "all", key=KEY, client=client)
            t_dist = time.monotonic() - t
            same = figures(got) == figures(want)
            names = len(want["algorithms"])
            print(f"equal  {tree}: {want['files']} files, {want['bytes'] / 1e6:.0f} MB, {names} names, "
                  f"{len(want['errors'])} errors: {'EQUAL' if same else 'DIFFERENT'} "
                  f"(cdc analyze -j 2 {t_cdc:.1f} s, distributed 2 workers {t_dist:.1f} s, "
                  f"{got['distributed']['shards']} shards)")
            if not same:
                for a, b in zip(got["algorithms"], want["algorithms"]):
                    if figures(a) != figures(b):
                        print("   ", a["algorithm"], figures(a), figures(b))
    finally:
        client.close()
        c.close()


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(client, tree, names):
    """One analyze call: its wall time, each worker's CPU time during it,
    and this process's (the client, the LocalCluster's scheduler and
    nannies)."""
    w0, c0, t = client.run(cpu_seconds), cpu_seconds(), time.monotonic()
    rep = cdd.analyze(tree, names, client=client)
    wall, c1, w1 = time.monotonic() - t, cpu_seconds(), client.run(cpu_seconds)
    return rep, wall, {a: w1[a] - w0[a] for a in w1}, c1 - c0


def phases(client, tree, names):
    """Where one run's wall time goes, from Dask's task stream: the walk, the
    wait for the first shard, the shards (compute time summed, and the
    time from the first worker done to the last), what follows the last
    shard (its split, the reducers, the report)."""
    t0 = time.time()
    with distributed.get_task_stream(client) as ts:
        cdd.analyze(tree, names, client=client)
    end = time.time()
    spans = {}
    for t in ts.data:
        kind = t["key"].split("-")[1]
        for s in t["startstops"]:
            if s["action"] == "compute":
                spans.setdefault(kind, []).append((s["start"], s["stop"], t["worker"]))
    walk_end = max(e for _, e, _ in spans["walk"])
    shards = spans["shard"]
    last = {}
    for _, e, w in shards:
        last[w] = max(last.get(w, 0), e)
    # (the first shard may start before the walk ends: it hands on shards as it goes)
    return (f"wall {end - t0:.3f} s: walk {walk_end - t0:.3f}, first shard started {min(s for s, _, _ in shards) - t0:.3f}, "
            f"{len(shards)} shards {sum(e - s for s, e, _ in shards):.3f} (summed), the last worker's tail "
            f"{max(last.values()) - min(last.values()):.3f}, after the last shard {end - max(last.values()):.3f}")


def scale(args):
    tree = args.scale_tree
    names = args.algorithms.split(",")
    times = {"1 worker": [], "2 workers": [], "cdc analyze -j 1": []}
    cpu = {1: [], 2: []}  # (busiest worker's CPU, all workers' CPU, this process's CPU) a run
    size = rss = None
    breakdown = {}
    # One cluster at a time (an idle one costs the client process ~2% of
    # a core), started and warmed up (the page cache, the workers'
    # imports) before its timed run.
    for r in range(args.rounds):
        for label, n in (("1 worker", 1), ("2 workers", 2), ("cdc analyze -j 1", 0)):
            if n:
                c, client = cluster(n, args.worker_profile == "on")
                try:
                    cdd.analyze(tree, names, client=client)
                    rep, wall, workers, here = timed(client, tree, names)
                    if n == 2:
                        rss = peak_rss(client)
                    if r == args.rounds - 1:
                        breakdown[n] = phases(client, tree, names)
                finally:
                    client.close()
                    c.close()
                times[label].append(wall)
                cpu[n].append((max(workers.values()), sum(workers.values()), here))
                size = rep["bytes"]
            else:
                _, t = cdc_analyze(args.cdc, ["-a", args.algorithms, "-j", "1", tree])
                times[label].append(t)
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in times.items():
        print(f"scale  {k:<18} median {size / med[k] / 1e6:7.1f} MB/s  "
              f"(runs: {', '.join(f'{size / x / 1e6:.0f}' for x in v)})")
    best = {k: min(v) for k, v in times.items()}  # the run least disturbed by other processes
    print(f"scale  2 workers / 1 worker: {med['1 worker'] / med['2 workers']:.2f}x (best runs: "
          f"{best['1 worker'] / best['2 workers']:.2f}x); 1 worker / cdc analyze -j 1: "
          f"{med['cdc analyze -j 1'] / med['1 worker']:.2f}x (best runs: {best['cdc analyze -j 1'] / best['1 worker']:.2f}x) "
          f"(load average {os.getloadavg()[0]:.1f})")
    # The same ratio from CPU time, for a loaded machine (where a
    # worker's wall time is mostly waiting for a core): one worker's CPU
    # time against a worker's share of the two workers' CPU time plus
    # half of the client process' (its scheduler, client and nannies
    # share the two cores with the two workers; with one worker they
    # have a core of their own). It leaves out the waits between tasks
    # and the imbalance of the end (given by the busiest worker's).
    m = {n: [statistics.median(x[i] for x in cpu[n]) for i in range(3)] for n in (1, 2)}
    print(f"scale  CPU time: 1 worker {m[1][0]:.2f} s (client process {m[1][2]:.2f} s); 2 workers: "
          f"{m[2][1]:.2f} s, the busiest {m[2][0]:.2f} s (client process {m[2][2]:.2f} s); "
          f"2 workers / 1 worker from CPU time: {m[1][0] / (m[2][1] / 2 + m[2][2] / 2):.2f}x "
          f"({m[1][0] / (m[2][0] + m[2][2] / 2):.2f}x with the busiest worker's)")
    for n, text in breakdown.items():
        print(f"scale  one more run, {n} worker{'s' if n > 1 else ''}: {text}")
    print(f"scale  peak RSS of the 2 workers after {size / 1e6:.0f} MB x 2 runs: "
          + ", ".join(f"{v / 2**20:.0f} MiB" for v in rss.values()))
    if args.half_tree:
        for t in (args.half_tree, tree):
            c, client = cluster(2)
            try:
                rep = cdd.analyze(t, names, client=client)
                rss = peak_rss(client)
                print(f"memory {t}: {rep['bytes'] / 1e6:.0f} MB, {rep['algorithms'][0]['distinct_chunks']} distinct "
                      f"chunks: worker peak RSS " + ", ".join(f"{v / 2**20:.0f} MiB" for v in rss.values()))
            finally:
                client.close()
                c.close()


def sketch(args):
    tree = args.sketch_tree
    sizes = [int(x) for x in args.sketch_sizes.split(",")]
    c, client = cluster(2)
    try:
        exact = cdd.analyze(tree, "fastcdc", *sizes, client=client)
        a = exact["algorithms"][0]
        moved_exact = sum(exact["distributed"]["bytes_shipped_by_worker"].values())
        print(f"sketch {tree}: {a['bytes'] / 1e6:.0f} MB, {a['chunks']} chunks, {a['distinct_chunks']} distinct "
              f"({a['distinct_bytes']} bytes); exact mode shipped {moved_exact / 1e6:.1f} MB of ids")
        errs_c, errs_b, stated_c, stated_b = [], [], [], []
        for seed in range(args.seeds):
            r = cdd.analyze(tree, "fastcdc", *sizes, client=client, mode="sketch", sketch_seed=seed)
            s, e = r["algorithms"][0], r["distributed"]["estimates"][0]
            assert not e["exact"]
            errs_c.append(s["distinct_chunks"] / a["distinct_chunks"] - 1)
            errs_b.append(s["distinct_bytes"] / a["distinct_bytes"] - 1)
            stated_c.append(e["distinct_chunks_rel_stderr"])
            stated_b.append(e["distinct_bytes_rel_stderr"])
            shipped = r["distributed"]["bytes_shipped_by_worker"]
        for name, errs, stated in (("distinct chunks", errs_c, stated_c), ("distinct bytes", errs_b, stated_b)):
            rms = math.sqrt(sum(x * x for x in errs) / len(errs))
            print(f"sketch {name}: {args.seeds} seeds, max |error| {100 * max(map(abs, errs)):.3f}%, "
                  f"rms {100 * rms:.3f}%, stated standard error {100 * statistics.mean(stated):.3f}%")
        print(f"sketch shipped per worker ({r['distributed']['shards']} shards): "
              + ", ".join(f"{v / 1e6:.2f} MB" for v in shipped.values()))
    finally:
        client.close()
        c.close()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cdc", required=True)
    p.add_argument("--tree", action="append", default=[])
    p.add_argument("--scale-tree")
    p.add_argument("--half-tree", help="half of --scale-tree, for the memory comparison")
    p.add_argument("--sketch-tree")
    p.add_argument("--sketch-sizes", default="128,512,2048", help="min,avg,max of the sketch runs")
    p.add_argument("--algorithms", default="fastcdc")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--worker-profile", choices=("on", "off"), default="on",
                   help="Dask's statistical profiler in the workers of the scale runs (on: Dask's default)")
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--what", default="equal,scale,sketch")
    args = p.parse_args()
    for what in args.what.split(","):
        {"equal": equal, "scale": scale, "sketch": sketch}[what](args)


if __name__ == "__main__":
    main()
