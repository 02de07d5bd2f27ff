# SPDX-License-Identifier: Apache-2.0
"""chunk(): inputs of every buffer kind, read in place; digests; results."""
import hashlib
import mmap
import os
import subprocess
import sys

import numpy as np
import pytest

import cdc_chunkers

DATA = cdc_chunkers.generate("splitmix64:7:1000003")


def test_every_buffer_kind_gives_the_same_chunks():
    expected = cdc_chunkers.chunk(DATA)
    assert len(expected) > 50
    arr = np.frombuffer(DATA, dtype=np.uint8).copy()
    for data in [bytearray(DATA), memoryview(DATA), arr, memoryview(arr)]:
        np.testing.assert_array_equal(cdc_chunkers.chunk(data).lengths, expected.lengths)
    with mmap.mmap(-1, len(DATA)) as m:
        m.write(DATA)
        np.testing.assert_array_equal(cdc_chunkers.chunk(m).lengths, expected.lengths)
    # An array of wider items is chunked as its raw bytes.
    words = arr[:1000000].view(np.uint32)
    np.testing.assert_array_equal(cdc_chunkers.chunk(words).lengths, cdc_chunkers.chunk(DATA[:1000000]).lengths)


def test_a_non_contiguous_buffer_is_refused_not_copied():
    arr = np.frombuffer(DATA, dtype=np.uint8)[::2]
    with pytest.raises((BufferError, ValueError), match="contiguous"):
        cdc_chunkers.chunk(arr)


def test_offsets_and_lengths_are_consistent_uint64_arrays():
    c = cdc_chunkers.chunk(DATA, "jc-v1.1.0", avg_size=4096)
    assert c.offsets.dtype == np.uint64 and c.lengths.dtype == np.uint64
    assert c.offsets.shape == c.lengths.shape == (len(c),)
    assert c.offsets[0] == 0 and int(c.lengths.sum()) == len(DATA)
    np.testing.assert_array_equal(c.offsets[1:], np.cumsum(c.lengths)[:-1])
    assert list(c)[:3] == [(int(c.offsets[i]), int(c.lengths[i])) for i in range(3)]
    assert c.digests is None and c.algorithm == "jc-v1.1.0" and c.digest == ""
    assert "chunks" in repr(c)


def test_an_empty_buffer_has_no_chunk():
    for digest in (None, "blake3"):
        c = cdc_chunkers.chunk(b"", digest=digest)
        assert len(c) == 0 and c.offsets.shape == (0,)
    assert cdc_chunkers.chunk(b"", digest="sha256").digests.shape == (0, 32)


def test_sha256_digests_equal_hashlib():
    c = cdc_chunkers.chunk(DATA, "ultracdc", digest="sha256")
    assert c.digests.shape == (len(c), 32) and c.digests.dtype == np.uint8
    for (offset, length), d in zip(c, c.digests):
        assert d.tobytes() == hashlib.sha256(DATA[offset:offset + length]).digest()


def test_blake3_of_known_inputs():
    # BLAKE3 of the empty input and of b"abc" (the reference implementation).
    assert cdc_chunkers.chunk(b"abc", "fixed-v1.0.0", avg_size=64, digest="blake3").digests[0].tobytes().hex() == \
        "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
    c = cdc_chunkers.chunk(bytes(64), "fixed-v1.0.0", avg_size=64, digest="xxh3")
    assert c.digests.shape == (1, 16)


@pytest.mark.parametrize("digest", ["blake3", "sha256", "xxh3"])
def test_digests_equal_the_cdc_tool(tmp_path, cdc_tool, digest):
    path = tmp_path / "in.bin"
    path.write_bytes(DATA)
    out = subprocess.run([cdc_tool, "chunk", "--csv", "--digest", digest, "-a", "kfastcdc", "--key", "ab" * 32,
                          str(path)], check=True, capture_output=True, text=True).stdout.splitlines()
    assert out[0] == "offset,length,digest"
    c = cdc_chunkers.chunk(DATA, "kfastcdc", key=bytes.fromhex("ab" * 32), digest=digest)
    assert [f"{o},{n},{d.tobytes().hex()}" for (o, n), d in zip(c, c.digests)] == out[1:]


def test_a_buffer_modified_after_the_call_changes_nothing():
    buf = bytearray(DATA)
    c = cdc_chunkers.chunk(buf, digest="blake3")
    lengths, digests = c.lengths.copy(), c.digests.copy()
    buf[:] = bytes(len(buf))  # zeros: other chunks, other digests
    np.testing.assert_array_equal(c.lengths, lengths)
    np.testing.assert_array_equal(c.digests, digests)
    assert not np.array_equal(cdc_chunkers.chunk(buf).lengths, lengths)


def test_chunk_copies_nothing_large():
    # In a fresh interpreter: chunking a 256 MiB bytearray raises the peak
    # resident size by the result arrays only, not by a copy of the input.
    script = """
import resource, cdc_chunkers
data = bytearray(256 << 20)
data[::4096] = b"x" * len(data[::4096])      # touch every page
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
c = cdc_chunkers.chunk(data, "fastcdc", digest="blake3")
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(len(c), (after - before) // 1024)
"""
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout.split()
    chunks, grown_mib = int(out[0]), int(out[1])
    assert chunks > 1000
    # Under AddressSanitizer (build-asan preloads it) reading the input maps
    # its shadow too, 1/8 of it: 32 MiB more, still far from a copy (256).
    limit = 32 + (32 if "libasan" in os.environ.get("LD_PRELOAD", "") else 0)
    assert grown_mib < limit, f"peak RSS grew by {grown_mib} MiB while chunking 256 MiB (limit {limit})"
