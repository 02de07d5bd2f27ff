# SPDX-License-Identifier: Apache-2.0
"""Memory lent to Python code outlives every view made of it, and a view
that would see other bytes is refused instead of read."""
import io
import subprocess
import sys
import textwrap

import pytest

import cdc_chunkers

DATA = cdc_chunkers.generate("splitmix64:21:600000")


class KeepingReader(io.RawIOBase):
    """A readinto() that keeps a slice of the buffer it was given."""

    def __init__(self, data):
        self.f = io.BytesIO(data)
        self.kept = []

    def readable(self):
        return True

    def readinto(self, b):
        n = self.f.readinto(b)
        self.kept.append(b[:n])
        return n


def test_a_reader_keeping_a_slice_of_its_buffer_is_refused():
    reader = KeepingReader(DATA)
    with pytest.raises(BufferError, match="readinto"):
        list(cdc_chunkers.iter_chunks(reader, "fastcdc", avg_size=4096))


def test_a_kept_slice_stays_valid_memory_after_the_chunker_is_gone():
    # In a child: a use of freed memory kills the interpreter (SIGSEGV,
    # or an ASan report under the sanitizers), it does not fail an assert.
    code = textwrap.dedent("""
        import gc, io, cdc_chunkers
        data = cdc_chunkers.generate("splitmix64:21:600000")
        kept = []
        class R(io.RawIOBase):
            def __init__(self): self.f = io.BytesIO(data)
            def readable(self): return True
            def readinto(self, b):
                n = self.f.readinto(b)
                kept.append(b[:n])
                return n
        c = cdc_chunkers.Chunker("fastcdc", avg_size=4096)
        try:
            for _ in c.reset(R()):
                pass
        except BufferError:
            pass
        del c
        gc.collect()
        junk = [bytearray(b"\\xff") * 300000 for _ in range(64)]   # reuse what was freed
        view = kept[0]
        view[:] = bytes(len(view))                        # write, then read
        assert bytes(view) == bytes(len(view))
        assert all(j.count(0) == 0 for j in junk)         # nothing else was written
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"
