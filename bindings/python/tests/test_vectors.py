# SPDX-License-Identifier: Apache-2.0
"""Every case of tests/vectors through chunk() and iter_chunks()."""
import io

import numpy as np
import pytest

import cdc_chunkers
from conftest import case_kwargs, compat_cases, input_bytes, vector_cases

CASES = vector_cases()


def case_id(c):
    key = ",key" if c["key_hex"] else ""
    return f'{c["algorithm"]}/{c["min"]}-{c["normal"]}-{c["max"]}{key}/{c["input"]}'


class ShortReads(io.RawIOBase):
    """A binary file whose readinto returns at most `step` bytes."""

    def __init__(self, data, step):
        self._data = memoryview(data)
        self._pos = 0
        self._step = step

    def readable(self):
        return True

    def readinto(self, buffer):
        n = min(len(buffer), self._step, len(self._data) - self._pos)
        buffer[:n] = self._data[self._pos:self._pos + n]
        self._pos += n
        return n


# Read sizes for iter_chunks, rotated over the cases (a case's size is raised
# so that no case needs more than ~4000 reads: the test stays fast).
READ_SIZES = [1, 997, 4096, 65537, 1 << 20, 1 << 30]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_chunk_matches_vector(case):
    data = input_bytes(case["input"])
    expected = np.array(case["lengths"], dtype=np.uint64)
    chunks = cdc_chunkers.chunk(data, case["algorithm"], **case_kwargs(case))
    assert chunks.lengths.dtype == np.uint64 and chunks.offsets.dtype == np.uint64
    np.testing.assert_array_equal(chunks.lengths, expected)
    np.testing.assert_array_equal(chunks.offsets, np.concatenate(([0], np.cumsum(expected)[:-1])).astype(np.uint64)
                                  if len(expected) else expected)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_iter_chunks_matches_vector(case):
    data = input_bytes(case["input"])
    index = CASES.index(case)
    step = max(READ_SIZES[index % len(READ_SIZES)], len(data) // 4000)
    got = [(offset, len(view)) for offset, view in
           cdc_chunkers.iter_chunks(ShortReads(data, step), case["algorithm"], **case_kwargs(case))]
    offsets = [0]
    for n in case["lengths"][:-1]:
        offsets.append(offsets[-1] + n)
    assert got == list(zip(offsets, case["lengths"])) if case["lengths"] else got == []


def test_every_algorithm_name_is_covered():
    names = {a["name"] for a in cdc_chunkers.algorithms()}
    assert names == {c["algorithm"] for c in CASES} | {c["algorithm"] for c in compat_cases()}
