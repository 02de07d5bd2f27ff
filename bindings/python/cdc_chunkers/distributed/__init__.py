# SPDX-License-Identifier: Apache-2.0
"""Dedup analysis across a Dask cluster: the report of `cdc analyze --json`
for files spread over many machines, computed where the files are.

    from distributed import Client
    import cdc_chunkers.distributed as cdd

    client = Client("tcp://scheduler:8786")
    report = cdd.analyze(["/data"], ["fastcdc", "ultracdc"], client=client)
    report = cdd.analyze({"node1": ["/srv/a"], "node2": ["/srv/b"]}, "all",
                         client=client, mode="sketch")

    python3 -m cdc_chunkers.distributed --scheduler tcp://HOST:8786 PATH...

Each worker walks and reads only paths local to it: the paths of a plain
list are read by any worker (a shared file system), those of a dict
{host or worker address: paths} only on that host. The files are cut into
shards; each shard is a task that reads its files once for every algorithm
(the library's analyze()), dedups within the shard and sends on its
distinct chunk ids only. The walk hands on its files as it goes (through a
distributed.Queue): the first shards run while it walks the rest.

mode="exact": the ids (16 bytes each: the 12 digest bytes `cdc analyze`
compares, and the size) are hash-partitioned into `buckets` packed arrays;
one reducer per partition counts its distinct chunks and bytes. Every
figure equals `cdc analyze --json` on the same files: chunks, distinct
chunks and bytes, the size statistics, the files that could not be read.

mode="sketch": each shard sends a HyperLogLog sketch (distinct chunks) and
a bottom-k sample of (id, size) (distinct bytes) instead, of a fixed size
(2^precision + 12 x sample bytes), merged by the client: the bytes moved do
not depend on the size of the corpus. Chunks, bytes and the size statistics
stay exact; the report says how far the estimates can be off (see
"distributed" in it, and _sketch.py).

A shard whose worker dies is run again by Dask; results are pure functions
of their inputs and each is used once, so nothing is counted twice or lost.
A walk whose worker dies is run again too; the shards its first run handed
on are dropped (cancelled, their figures never used) and the new run's
taken instead.
Progress: the tasks appear in the Dask dashboard (cdc-walk, cdc-shard,
cdc-reduce), and progress=True draws a line on stderr.
"""
import asyncio
import math
import os
import sys
import time
import uuid
import warnings

import numpy as np

from .. import _core
from . import _sketch, _tasks

__all__ = ["analyze", "DEFAULT_PRECISION", "DEFAULT_SAMPLE"]

#: HyperLogLog registers: 2^16 (64 KiB a shard), relative standard error 0.41%.
DEFAULT_PRECISION = 16
#: Bottom-k sample size: 2^17 ids (1.5 MiB a shard); distinct bytes within
#: about sqrt(1 + cv^2) / sqrt(2^17) (~0.3% for chunk sizes of CDC spread).
DEFAULT_SAMPLE = 1 << 17

_MiB = 1 << 20
# Bytes a shard reads at a time (cdc analyze: 2 MiB). Two workers on the two
# cores of the benchmark's machine (1 MiB of L2 cache each) took 3-5% more
# CPU time than one at a time with 2 MiB buffers and none with 512 KiB; one
# alone takes the same time with either.
_READ_SIZE = 512 << 10


def _path_bytes(path):
    if isinstance(path, (bytes, str)) or hasattr(path, "__fspath__"):
        b = os.fsencode(path)
    else:
        raise TypeError(f"a path must be a str, bytes or an os.PathLike, not {type(path).__name__}")
    if b"\0" in b:
        raise ValueError("embedded null byte")
    if b == b"-":
        raise ValueError("'-' (standard input) cannot be read by a cluster: give files or directories")
    return b


def _path_list(paths):
    if isinstance(paths, (bytes, str)) or hasattr(paths, "__fspath__"):
        return [_path_bytes(paths)]
    if not hasattr(paths, "__iter__"):
        raise TypeError(f"paths must be a path or an iterable of paths, not {type(paths).__name__}")
    return [_path_bytes(p) for p in paths]


def _groups(paths):
    """[(host or None, [path bytes])]: None = any worker may read them."""
    if type(paths).__name__ == "Bag" and hasattr(paths, "compute"):  # a dask.bag of paths
        paths = paths.compute()
    if isinstance(paths, dict):
        groups = [(str(host), _path_list(p)) for host, p in paths.items()]
    else:
        groups = [(None, _path_list(paths))]
    groups = [(h, p) for h, p in groups if p]
    if not groups:
        raise ValueError("paths is empty")
    return groups


def _plan(files, target, parts=0, most=0):
    """Consecutive files (walk order) in shards of about `target` bytes; with
    parts > 0, of about min(most, max(target, remaining bytes / parts))
    instead (guided self-scheduling): large shards first, then smaller ones,
    so that the last shards, run while other workers are already idle, are
    short."""
    remaining = sum(f[1] for f in files)
    shards, current, size = [], [], 0

    def next_goal():
        return min(most, max(target, remaining // parts)) if parts else target

    goal = next_goal()
    for f in files:
        current.append(f)
        size += f[1]
        if size >= goal:
            shards.append((current, size))
            remaining -= size
            current, size = [], 0
            goal = next_goal()
    if current:
        shards.append((current, size))
    return shards


def _streamed_walks(walks, queue, batch, retired):
    """The walks' results (their files: what they did not hand on), calling
    batch(group, files) for each batch a walk's current run puts in the
    queue (see _tasks.walk) and retired(group) when a walk's run is
    replaced by a new one (its worker died): the client then drops what the
    earlier run gave."""
    current, got, results, gone = {}, {}, {}, set()
    while len(results) < len(walks):
        try:
            message = queue.get(timeout=0.5)
        except (TimeoutError, asyncio.TimeoutError):
            for g, w in enumerate(walks):
                if g not in results and w.status == "error":
                    w.result()  # raises the walk's error
            continue
        kind, g, attempt, seq, files = _tasks.unpack(message)
        if attempt in gone or g in results:
            continue
        if current.get(g) != attempt:
            if current.get(g) is not None:
                gone.add(current[g])
                retired(g)
            current[g], got[g] = attempt, 0
        if seq != got[g]:
            raise RuntimeError(f"the walk of {g} handed on batch {seq} after {got[g]} batches")
        if kind == "files":
            batch(g, files)
            got[g] += 1
        elif kind == "failed":
            walks[g].result()  # raises the walk's error
            raise RuntimeError(f"the walk of {g} failed and then ended")
        else:
            r = _tasks.unpack(walks[g].result())
            if r["attempt"] == attempt:
                results[g] = r
            else:  # (this run's worker died after it ended: the next run's batches follow)
                gone.add(attempt)
                retired(g)
                current[g] = None
    return [results[g] for g in range(len(walks))]


def _host_of(address):
    """'tcp://10.0.0.1:40123' -> '10.0.0.1' (as Dask's worker restrictions read it)."""
    rest = address.split("://", 1)[-1]
    return rest.rsplit(":", 1)[0].strip("[]")


class _Progress:
    def __init__(self, target, shards, total):
        self.target, self.shards, self.total = target, shards, total
        self.done = self.bytes = 0
        self.start = self.last = time.monotonic()
        self.tty = target is True and sys.stderr.isatty()
        self.printed = -1  # shards done at the last line printed

    def step(self, nbytes, final=False, walked=False):
        if not final and not walked:
            self.done += 1
            self.bytes += nbytes
        if not self.target:
            return
        now = time.monotonic()
        info = {"shards_done": self.done, "shards": self.shards, "bytes_done": self.bytes, "bytes": self.total,
                "seconds": now - self.start}
        if callable(self.target):
            self.target(info)
            return
        if not final and not walked and not self.tty and now - self.last < 2.0 and self.done < self.shards:
            return
        if final and not self.tty and self.printed == self.done:
            return  # (the line of the last shard said it all)
        self.last, self.printed = now, self.done
        rate = self.bytes / max(now - self.start, 1e-9) / 1e6
        line = (f"cdc: {self.done}/{self.shards} shards, {self.bytes / 1e6:,.0f} of {self.total / 1e6:,.0f} MB "
                f"({100.0 * self.bytes / max(self.total, 1):.0f}%), {rate:,.0f} MB/s")
        sys.stderr.write(("\r" + line + "\x1b[K" + ("\n" if final else "")) if self.tty else line + "\n")
        sys.stderr.flush()


def _submit(client, fn, *args, **kwargs):
    """client.submit(fn, ...), from a function of one line: Dask (2022.12)
    reads the source of the function that calls submit() at each call, for
    its dashboard, and tokenizing _run's took ~2.7 ms a task (0.13 s of CPU
    a run of 47 tasks, while the shards run). A shard's file list travels
    as one packed bytes object, a few MiB for thousands of small files:
    Dask's warning that advises scattering it (a round trip more per shard)
    is not for the user of analyze()."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Large object of size", category=UserWarning)
        return client.submit(fn, *args, **kwargs)


def _bytes_sent(client, token):
    """Bytes of this run's tasks each worker sent to others (Dask's transfer
    logs; a worker restarted meanwhile has lost its log)."""
    def sent(dask_worker, token):
        total = 0
        for t in list(getattr(dask_worker, "outgoing_transfer_log", [])):
            total += sum(n for k, n in t.get("keys", {}).items() if token in str(k))
        return total

    try:
        return client.run(sent, token=token)
    except Exception:  # an old or changed Dask: the figure is informative only
        return {}


def analyze(paths, algorithms="fastcdc", min_size=0, avg_size=0, max_size=0, *, key=None, level=None, seed=None,
            polynomial=None, window=None, digest="blake3", follow_symlinks=False, client=None, mode="exact",
            buckets=0, shard_bytes=0, precision=DEFAULT_PRECISION, sample=DEFAULT_SAMPLE, sketch_seed=0,
            progress=False, retries=2):
    """Dedup figures of files and trees spread over a Dask cluster: the
    document `cdc analyze --json` prints (and cdc_chunkers.analyze()
    returns), with a "distributed" section.

    paths        a path or a list of paths (str, bytes or os.PathLike), read
                 by any worker (a shared file system); a dict {host or worker
                 address: paths}, each read on that host only; or a dask.bag
                 of paths (read by any worker).
    algorithms, min_size, avg_size, max_size, key, level, seed, polynomial,
    window, digest, follow_symlinks
                 as for cdc_chunkers.analyze().
    client       a distributed.Client; None: the current one, or else a
                 LocalCluster of this machine's cores, closed at the end.
    mode         "exact" (equal to cdc analyze) or "sketch" (see the module).
    buckets      exact mode: partitions of the ids (0: one per worker thread).
    shard_bytes  bytes of files per task (0, exact mode: half of each
                 thread's share of the bytes left, at most 256 MiB, down to a
                 sixteenth of its share of all bytes, 4 MiB .. 64 MiB;
                 sketch mode: half of each thread's share).
    precision, sample, sketch_seed
                 sketch mode: HyperLogLog registers (2^precision, 4..18), the
                 bottom-k sample size, and the seed of the sketches' hash.
    progress     True: a progress line on stderr; a callable: called with
                 {"shards_done", "shards", "bytes_done", "bytes", "seconds"}
                 once the walk is done (shards_done 0; shards the walk handed
                 on may have started),
                 then as shards finish, and once at the end.
    retries      runs again of a task that raised (a worker that dies is
                 handled by Dask whatever this is).

    Raises ValueError for invalid options and OSError for a top-level path
    that does not exist on the worker that walks it; a file that cannot be
    read is listed in "errors" and skipped, as by cdc analyze.
    """
    t0 = time.monotonic()
    if mode not in ("exact", "sketch"):
        raise ValueError(f"mode = {mode!r} is invalid: must be 'exact' or 'sketch'")
    names = [algorithms] if isinstance(algorithms, str) else list(algorithms)
    spec = {"algorithms": names, "min_size": min_size, "avg_size": avg_size, "max_size": max_size, "key": key,
            "level": level, "seed": seed, "polynomial": polynomial, "window": window, "digest": digest,
            "follow_symlinks": bool(follow_symlinks), "read_size": _READ_SIZE}
    resolved = _core._dist_check(spec)  # bad options fail here, before any task
    sketch = mode == "sketch"
    if sketch and not 4 <= precision <= 18:
        raise ValueError(f"precision = {precision} is invalid: must be 4..18")
    if sketch and sample < 2:
        raise ValueError(f"sample = {sample} is invalid: must be >= 2")
    if buckets < 0 or shard_bytes < 0:
        raise ValueError("buckets and shard_bytes must be >= 0")
    groups = _groups(paths)

    own = None
    if client is None:
        import distributed
        try:
            client = distributed.get_client()
        except ValueError:
            # No dashboard, so no use for Dask's statistical profiler either:
            # it samples each worker's threads every 10 ms (half of an idle
            # worker's CPU time).
            import dask
            with dask.config.set({"distributed.worker.profile.enabled": False}):
                cluster = distributed.LocalCluster(n_workers=os.cpu_count() or 1, threads_per_worker=1,
                                                   dashboard_address=None)
            client = distributed.Client(cluster)
            own = (client, cluster)
    try:
        return _run(client, groups, spec, resolved, sketch, buckets, shard_bytes, precision, sample, sketch_seed,
                    progress, retries, t0)
    finally:
        if own:
            own[0].close()
            own[1].close()


def _run(client, groups, spec, resolved, sketch, buckets, shard_bytes, precision, sample, sketch_seed, progress,
         retries, t0):
    token = uuid.uuid4().hex[:12]
    nthreads = client.nthreads()
    threads = max(1, sum(nthreads.values()))
    for host, _ in groups:
        if host and not any(host == a or host == _host_of(a) for a in nthreads):
            raise ValueError(f"no worker on {host!r} to read its paths (workers: {', '.join(sorted(nthreads))})")

    def where(host):
        return {"workers": [host], "allow_other_workers": False} if host else {}

    import distributed
    nbuckets = buckets or threads
    most = 256 * _MiB
    # Shards are submitted while the walk goes on, each as soon as the walk
    # has handed on its files (a walk of 161k files took 0.7 s, with every
    # worker idle meanwhile): with shard_bytes, every shard; by default in
    # exact mode, shards of the largest size (256 MiB), the rest planned
    # once the walk is done; in sketch mode by default, none (its shards'
    # size follows from the whole).
    stream = shard_bytes or (0 if sketch else most)
    queue = distributed.Queue(f"cdc-walk-{token}", client=client) if stream else None
    top = 1 << 40  # shards handed on by the walk run first, in walk order
    shards, plan = [], []  # futures, and the bytes of each (None: dropped)
    figures, sketches, splits = [], [], []  # per shard: its figures, sketch, bucket parts
    own = {}  # group -> indexes of the shards from its walk's current run

    def submit_shard(host, files, size, priority):
        i = len(shards)
        s = _submit(client, _tasks.shard, _tasks.pack(files), spec, 0 if sketch else nbuckets,
                    precision if sketch else 0, sample, sketch_seed, key=f"cdc-shard-{token}-{i}", retries=retries,
                    priority=priority, **where(host))
        shards.append(s)
        plan.append(size)  # (not its files: the client holds no list of every file)
        # (the tasks that split a shard's result run as soon as it is
        # there, before any other shard)
        figures.append(_submit(client, _tasks.figures, s, key=f"cdc-figures-{token}-{i}", priority=top + 1))
        if sketch:
            sketches.append(_submit(client, _tasks.sketch, s, key=f"cdc-sketch-{token}-{i}", priority=top + 1))
        else:
            splits.append([_submit(client, _tasks.bucket, s, r, key=f"cdc-bucket-{token}-{i}-{r}", priority=top + 1)
                           for r in range(nbuckets)])
        return i

    def batch(g, files):
        own.setdefault(g, []).append(submit_shard(groups[g][0], files, sum(f[1] for f in files), top - len(shards)))

    def retired(g):
        # A walk run again (its worker died): what its earlier run handed on
        # is dropped, shards and all, never counted.
        dropped = own.pop(g, [])
        client.cancel([shards[i] for i in dropped] + [figures[i] for i in dropped] +
                      [t for i in dropped for t in (sketches[i:i + 1] if sketch else splits[i])])
        for i in dropped:
            plan[i] = None

    # (a walk that raises names a bad top-level path: not worth a retry)
    walks = [_submit(client, _tasks.walk, p, spec["follow_symlinks"], queue.name if queue else None, i, stream,
                     key=f"cdc-walk-{token}-{i}", pure=False, **where(h)) for i, (h, p) in enumerate(groups)]
    try:
        walked = (_streamed_walks(walks, queue, batch, retired) if queue
                  else [_tasks.unpack(w) for w in client.gather(walks)])
    finally:
        if queue:
            queue.close()
    del walks  # (their results are in: no run again of a walk whose worker dies now)
    during = sum(len(v) for v in own.values())
    total = sum(p for p in plan if p is not None) + sum(f[1] for w in walked for f in w["files"])
    # Exact mode, by default: shards of half of each thread's share of what
    # is left (at most 256 MiB), down to a sixteenth of its share of the
    # whole (4 MiB .. 64 MiB) at the end; sketch mode: half of each thread's
    # share (a sketch costs the same whatever its shard's size).
    parts = 0
    if shard_bytes:
        target = shard_bytes
    elif sketch:
        target = max(_MiB, math.ceil(total / (2 * threads)))
    else:
        target = min(64 * _MiB, max(4 * _MiB, total // (16 * threads)))
        parts = 2 * threads
    rest = [(h, files, size) for (h, _), w in zip(groups, walked) for files, size in _plan(w["files"], target, parts, most)]
    # The largest shards first (Dask runs the tasks of higher priority
    # first): the run ends with the small ones, the workers finishing
    # together.
    order = sorted(range(len(rest)), key=lambda i: -rest[i][2])
    rank = {i: len(rest) - k for k, i in enumerate(order)}
    meter = _Progress(progress, during + len(rest), total)
    meter.step(0, walked=True)  # the walk is done, no shard counted yet (and none of these started)
    for i, (h, files, size) in enumerate(rest):
        submit_shard(h, files, size, rank[i])
    del rest
    for w in walked:
        w["files"] = None  # (sent with the shards)
    keep = [i for i, p in enumerate(plan) if p is not None]
    shards, plan, figures = [shards[i] for i in keep], [plan[i] for i in keep], [figures[i] for i in keep]
    if sketch:
        sketches = [sketches[i] for i in keep]
    else:
        parts = [[splits[i][r] for i in keep] for r in range(nbuckets)]
        reducers = [_submit(client, _tasks.reduce, *p, key=f"cdc-reduce-{token}-{r}") for r, p in enumerate(parts)]
    # A shard's figures, fetched as each is done (a shard is done when its
    # figures are): no wait for all of them after the last shard.
    sizes = {f.key: size for f, size in zip(figures, plan)}
    fetched = {}
    for done, result in distributed.as_completed(figures, with_results=True):
        fetched[done.key] = result
        meter.step(sizes[done.key])
    meter.step(0, final=True)

    shard_figures = [fetched[f.key] for f in figures]
    n = len(resolved)
    algos = [{"files": 0, "bytes": 0, "chunks": 0, "distinct_chunks": 0, "distinct_bytes": 0, "cut_seconds": 0.0,
              "hash_seconds": 0.0, "index_bytes": 0, "sizes": []} for _ in range(n)]
    for f in shard_figures:
        for a, s in zip(algos, f["algorithms"]):
            for k in ("files", "bytes", "chunks", "cut_seconds", "hash_seconds"):
                a[k] += s[k]
            a["sizes"].append(s["sizes"])
    info = {"mode": "sketch" if sketch else "exact", "workers": len(client.nthreads()), "threads": threads,
            "shards": len(shards), "shards_during_walk": during, "shard_bytes": target}
    if sketch:
        per_shard = client.gather(sketches)
        estimates = []
        for k, a in enumerate(algos):
            regs = _sketch.merge_registers([s[k]["registers"] for s in per_shard])
            hashes, sizes_ = _sketch.merge_samples([(s[k]["sample_hashes"], s[k]["sample_sizes"]) for s in per_shard],
                                                   sample)
            exact = not any(s[k]["truncated"] for s in per_shard)
            d_sample, bytes_est, bytes_err = _sketch.bottom_k_estimate(hashes, sizes_, sample, exact)
            chunks_est = d_sample if exact else (_sketch.hll_estimate(regs) if regs is not None else 0)
            a["distinct_chunks"] = int(round(chunks_est))
            a["distinct_bytes"] = min(int(round(bytes_est)), a["bytes"])
            a["index_bytes"] = (regs.nbytes if regs is not None else 0) + 12 * len(hashes)
            estimates.append({"algorithm": resolved[k], "exact": exact,
                              "distinct_chunks_rel_stderr": 0.0 if exact else _sketch.hll_rel_stderr(precision),
                              "distinct_bytes_rel_stderr": bytes_err})
        info.update({"precision": precision, "sample": sample, "sketch_seed": sketch_seed, "estimates": estimates,
                     "error_bound": "each estimate is within 3 relative standard errors of the true figure "
                                    "with probability ~99.7% (0 when exact: no shard had more distinct chunks "
                                    "than the sample holds)"})
    else:
        for counts in client.gather(reducers):
            for a, (chunks, nbytes, memory) in zip(algos, counts):
                a["distinct_chunks"] += chunks
                a["distinct_bytes"] += nbytes
                a["index_bytes"] += memory
        info["buckets"] = nbuckets
    # What each worker's shards sent on: 16 bytes an id (exact), or their
    # sketches (sketch mode).
    shipped = {}
    for f in shard_figures:
        nbytes = (sum(a["sketch_bytes"] for a in f["algorithms"]) if sketch
                  else 16 * sum(a["shard_distinct_chunks"] for a in f["algorithms"]))
        shipped[f["worker"]] = shipped.get(f["worker"], 0) + nbytes
    info["bytes_shipped_by_worker"] = shipped
    info["bytes_sent_by_worker"] = _bytes_sent(client, token)

    errors = [e for w in walked for e in w["errors"]] + [e for f in shard_figures for e in f["errors"]]
    parts = {"algorithms": algos, "errors": errors, "warnings": [e for w in walked for e in w["warnings"]],
             "symlinks_skipped": sum(w["symlinks_skipped"] for w in walked),
             "duplicates_skipped": sum(w["duplicates_skipped"] for w in walked),
             "jobs": threads, "buffer_bytes": max([f["buffer_bytes"] for f in shard_figures], default=0),
             "wall_seconds": time.monotonic() - t0}
    report = _core._dist_report(spec, parts)
    report["distributed"] = info
    return report
