# SPDX-License-Identifier: Apache-2.0
"""The functions Dask runs on the workers (module-level, so that they are
pickled by reference: a worker imports cdc_chunkers itself). Each is a pure
function of its arguments: a task that is run again (its worker died, its
result was lost) gives the same result, and each result is used once. The
walk also hands on the files it has walked while it goes on, each run of it
under a name of its own (see walk)."""
import pickle
import uuid

from .. import _core


# A list of thousands of (path, size) tuples costs Dask ~0.1 ms an item to
# move and rebuild (0.55 s for the 5,260 files of /usr/lib/x86_64-linux-gnu,
# against 2 ms to pickle them): the walk's result and a shard's file list
# travel as one pickled bytes object instead.
def pack(obj):
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(data):
    return pickle.loads(data)


def walk(paths, follow_symlinks, queue=None, group=0, batch_bytes=0):
    """The walk of `cdc analyze` over paths local to this worker (packed).

    With `queue` (the name of a distributed.Queue), each time the files
    walked since the last batch add up to batch_bytes they are put there as
    ("files", group, attempt, seq, files), and the result holds the rest; a
    walk that ends puts ("done", ...) and one that fails ("failed", ...).
    `attempt` names this run of the task: a walk run again (its worker died)
    starts again from seq 0 under a new name, and the client drops what it
    took from the earlier run."""
    if not queue:
        return pack(_core._dist_walk(paths, follow_symlinks))
    from distributed import Queue
    q = Queue(queue)
    attempt = uuid.uuid4().hex
    seq = 0

    def emit(files):
        nonlocal seq
        q.put(pack(("files", group, attempt, seq, files)))
        seq += 1

    try:
        try:
            result = _core._dist_walk(paths, follow_symlinks, batch_bytes, emit)
        except BaseException:
            q.put(pack(("failed", group, attempt, seq, None)))
            raise
        result["attempt"], result["batches"] = attempt, seq
        q.put(pack(("done", group, attempt, seq, None)))
        return pack(result)
    finally:
        # (the scheduler keeps a queue while a handle to it is open: this
        # one's, and the client's until its run ends)
        q.close()


def _worker_address():
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return ""


def shard(files, spec, buckets, precision, sample, sketch_seed):
    """One shard of files (packed): its figures per algorithm, with its
    distinct ids in `buckets` packed arrays (exact mode, precision 0) or its
    sketch."""
    result = _core._dist_shard(unpack(files), spec, buckets, precision, sample, sketch_seed, 1)
    result["worker"] = _worker_address()
    return result


def figures(result):
    """A shard's result without its ids (small: what the client gathers)."""
    keep = ("files", "bytes", "chunks", "cut_seconds", "hash_seconds", "sizes", "shard_distinct_chunks")
    sketch = ("registers", "sample_hashes", "sample_sizes")
    return {**{k: v for k, v in result.items() if k != "algorithms"},
            "algorithms": [{**{k: a[k] for k in keep}, "sketch_bytes": sum(a[k].nbytes for k in sketch if k in a)}
                           for a in result["algorithms"]]}


def bucket(result, r):
    """Partition r of a shard's ids, one array per algorithm."""
    return [a["buckets"][r] for a in result["algorithms"]]


def sketch(result):
    """A shard's sketch, one per algorithm."""
    return [{k: a[k] for k in ("registers", "sample_hashes", "sample_sizes", "truncated")}
            for a in result["algorithms"]]


def reduce(*parts):
    """Distinct chunks, distinct bytes and index memory of partition r, per
    algorithm, from every shard's part r."""
    return [_core._dist_distinct([p[k] for p in parts]) for k in range(len(parts[0]))] if parts else []
