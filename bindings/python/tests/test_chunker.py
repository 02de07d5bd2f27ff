# SPDX-License-Identifier: Apache-2.0
"""Chunker and iter_chunks(): sources, the scan buffer, reset, views."""
import io
import os

import numpy as np
import pytest

import cdc_chunkers

DATA = cdc_chunkers.generate("splitmix64:3:700001")
EXPECTED = cdc_chunkers.chunk(DATA, "fastcdc", avg_size=4096)


def pairs(it):
    return [(offset, bytes(view)) for offset, view in it]


def expected_pairs():
    return [(o, DATA[o:o + n]) for o, n in EXPECTED]


def test_path_file_and_memory_sources_agree(tmp_path):
    path = tmp_path / "in.bin"
    path.write_bytes(DATA)
    want = expected_pairs()
    assert pairs(cdc_chunkers.iter_chunks(str(path), "fastcdc", avg_size=4096)) == want
    assert pairs(cdc_chunkers.iter_chunks(path, "fastcdc", avg_size=4096)) == want  # os.PathLike
    with open(path, "rb") as f:
        assert pairs(cdc_chunkers.iter_chunks(f, "fastcdc", avg_size=4096)) == want
    with open(path, "rb", buffering=0) as f:
        assert pairs(cdc_chunkers.iter_chunks(f, "fastcdc", avg_size=4096)) == want
    assert pairs(cdc_chunkers.iter_chunks(io.BytesIO(DATA), "fastcdc", avg_size=4096)) == want
    assert pairs(cdc_chunkers.iter_chunks(DATA, "fastcdc", avg_size=4096)) == want


def test_a_file_with_read_only():
    class ReadOnly:
        def __init__(self):
            self.f = io.BytesIO(DATA)

        def read(self, n):
            return self.f.read(min(n, 1000))

    assert pairs(cdc_chunkers.iter_chunks(ReadOnly(), "fastcdc", avg_size=4096)) == expected_pairs()


def test_views_of_a_memory_source_are_the_source_itself():
    arr = np.frombuffer(DATA, dtype=np.uint8).copy()
    c = cdc_chunkers.Chunker("fastcdc", avg_size=4096, views=True).reset(arr)
    offset, view = next(c)
    assert view.obj is arr and view.readonly and len(view) == EXPECTED.lengths[0]
    arr[0] ^= 0xFF  # the view sees the change: no copy was made
    assert view[0] == arr[0]
    assert c.buffer_size == 0  # memory sources need no scan buffer


def test_a_buffer_being_chunked_cannot_be_resized():
    buf = bytearray(DATA)
    c = cdc_chunkers.iter_chunks(buf, "fastcdc", avg_size=4096)
    next(c)
    with pytest.raises(BufferError):
        buf.extend(b"x")
    c.close()
    del c
    buf.extend(b"x")  # released once the chunker lets go


def test_the_scan_buffer_is_bounded_and_reused(tmp_path):
    path = tmp_path / "in.bin"
    path.write_bytes(DATA * 4)
    c = cdc_chunkers.Chunker("fastcdc", avg_size=4096)
    assert c.buffer_size == 0
    total = sum(len(v) for _, v in c.reset(path))
    assert total == 4 * len(DATA)
    assert c.buffer_size == 256 * 1024  # max(2 x max_size, 256 KiB), far below the stream
    assert pairs(c.reset(io.BytesIO(DATA))) == expected_pairs()
    assert c.offset == len(DATA)


def test_a_caller_buffer_holds_the_stream():
    buf = bytearray(40000)
    c = cdc_chunkers.Chunker("fastcdc", avg_size=4096, max_size=32768, buffer=buf)
    assert c.buffer_size == len(buf)
    got = pairs(c.reset(io.BytesIO(DATA)))
    assert got == [(o, DATA[o:o + n]) for o, n in cdc_chunkers.chunk(DATA, "fastcdc", avg_size=4096, max_size=32768)]
    c2 = cdc_chunkers.Chunker("fastcdc", avg_size=4096, max_size=32768, buffer=buf, views=True)
    offset, view = next(c2.reset(io.BytesIO(DATA)))
    assert view.obj.__class__.__name__ == "_Lease" and bytes(view) == DATA[:len(view)]
    buf[0] ^= 0xFF  # a view of the caller's buffer, not a copy
    assert view[0] == buf[0]
    with pytest.raises(ValueError, match="max_size"):
        cdc_chunkers.Chunker("fastcdc", max_size=65536, buffer=bytearray(1000))
    with pytest.raises(ValueError, match="writable"):
        cdc_chunkers.Chunker("fastcdc", buffer=bytes(1 << 20))


def test_reset_properties_and_close(tmp_path):
    c = cdc_chunkers.Chunker("jc-v1.1.0", avg_size=4096)
    assert (c.algorithm, c.min_size, c.avg_size, c.max_size, c.keyed) == ("jc-v1.1.0", 2048, 4096, 65536, False)
    assert "jc-v1.1.0" in repr(c)
    assert list(c) == []  # no source yet: an empty stream
    first = pairs(c.reset(DATA))
    assert first == pairs(c.reset(DATA))  # reset starts over
    it = c.reset(DATA)
    next(it)
    assert c.offset == first[1][0]
    c.close()
    assert list(c) == []
    path = tmp_path / "f"
    path.write_bytes(DATA)
    with cdc_chunkers.Chunker("jc-v1.1.0", avg_size=4096) as c2:
        fds = len(os.listdir("/proc/self/fd"))
        next(c2.reset(path))
        assert len(os.listdir("/proc/self/fd")) == fds + 1
    assert len(os.listdir("/proc/self/fd")) == fds  # closed on exit
    assert pairs(c.reset(None)) == []


def test_a_file_is_closed_at_the_end_of_its_stream(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(DATA)
    fds = len(os.listdir("/proc/self/fd"))
    c = cdc_chunkers.iter_chunks(path)
    for _ in c:
        pass
    assert len(os.listdir("/proc/self/fd")) == fds
    assert c.offset == len(DATA)


def test_chunker_chunk_equals_chunk():
    c = cdc_chunkers.Chunker("ultracdc", avg_size=10240)
    a = c.chunk(DATA, digest="xxh3")
    b = cdc_chunkers.chunk(DATA, "ultracdc", avg_size=10240, digest="xxh3")
    np.testing.assert_array_equal(a.lengths, b.lengths)
    np.testing.assert_array_equal(a.digests, b.digests)


def test_a_chunker_cannot_be_used_from_its_own_reader():
    c = cdc_chunkers.Chunker("fastcdc")

    class Reentrant(io.RawIOBase):
        def readinto(self, b):
            next(c)
            return 0

    with pytest.raises(RuntimeError, match="in use"):
        list(c.reset(Reentrant()))
