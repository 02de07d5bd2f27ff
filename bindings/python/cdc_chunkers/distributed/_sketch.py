# SPDX-License-Identifier: Apache-2.0
"""Merging and reading the sketches of sketch mode.

Distinct chunks: HyperLogLog (Flajolet, Fusy, Gandouet, Meunier 2007) with
a 64-bit hash, registers merged by maximum, read with Ertl's improved raw
estimator (O. Ertl, "New cardinality estimation algorithms for HyperLogLog
sketches", 2017, eq. 15-17), which needs no bias tables and no switch to
linear counting: relative standard error 1.04 / sqrt(2^precision).

Distinct bytes: a bottom-k sample (the k smallest hashes of distinct ids,
with their sizes; Cohen and Kaplan 2007). The k smallest of the union of
the shards' samples are the k smallest of the whole corpus, so the merge is
exact. With tau the k-th smallest hash as a fraction of 2^64, every distinct
chunk is in the sample below tau with probability tau, and sum(size) / tau
over the k - 1 smallest is the Horvitz-Thompson estimate of the distinct
bytes; its standard error is estimated from the same sample. When no shard
had more than k distinct chunks the sample is the whole set: both figures
are then exact.
"""
import math

import numpy as np


def merge_registers(registers):
    out = None
    for r in registers:
        out = r.copy() if out is None else np.maximum(out, r, out=out)
    return out


def _sigma(x):
    if x == 1.0:
        return math.inf
    y, z = 1.0, x
    while True:
        x = x * x
        z_old = z
        z += x * y
        y += y
        if z == z_old:
            return z


def _tau(x):
    if x == 0.0 or x == 1.0:
        return 0.0
    y, z = 1.0, 1.0 - x
    while True:
        x = math.sqrt(x)
        z_old = z
        y *= 0.5
        z -= (1.0 - x) ** 2 * y
        if z == z_old:
            return z / 3.0


def hll_estimate(registers):
    """Ertl's improved raw estimate of the number of distinct hashes."""
    m = registers.size
    p = int(m).bit_length() - 1
    q = 64 - p
    counts = np.bincount(registers.astype(np.int64), minlength=q + 2)
    z = m * _tau(1.0 - counts[q + 1] / m)
    for k in range(q, 0, -1):
        z = 0.5 * (z + counts[k])
    z += m * _sigma(counts[0] / m)
    return m * m / (2.0 * math.log(2.0)) / z if z else 0.0


def hll_rel_stderr(precision):
    return 1.04 / math.sqrt(1 << precision)


def merge_samples(parts, k):
    """The k smallest (hash, size) of the union of the shards' samples
    (a chunk found in several shards has one hash and one size)."""
    hashes = np.concatenate([h for h, _ in parts]) if parts else np.zeros(0, np.uint64)
    sizes = np.concatenate([s for _, s in parts]) if parts else np.zeros(0, np.uint32)
    hashes, first = np.unique(hashes, return_index=True)
    return hashes[:k], sizes[first][:k]


def bottom_k_estimate(hashes, sizes, k, exact):
    """(distinct chunks, distinct bytes, relative standard error of the
    bytes) from the merged sample."""
    if exact:
        return len(hashes), int(sizes.sum(dtype=np.uint64)), 0.0
    tau = (float(hashes[k - 1]) + 1.0) / 2.0 ** 64
    below = sizes[:k - 1].astype(np.float64)
    estimate = below.sum() / tau
    variance = float((below * below).sum()) * (1.0 - tau) / (tau * tau)
    return (k - 1) / tau, estimate, (math.sqrt(variance) / estimate if estimate else 0.0)
