# SPDX-License-Identifier: Apache-2.0
"""Errors: ValueError for options, OSError for I/O, TypeError for sources."""
import errno
import os
import pathlib
import io

import pytest

import cdc_chunkers

DATA = cdc_chunkers.generate("splitmix64:9:300000")


@pytest.mark.parametrize("kwargs, match", [
    ({"algorithm": "nope"}, "unknown algorithm 'nope'"),
    ({"min_size": 65536, "max_size": 4096}, "min"),
    ({"min_size": -1}, "min_size = -1"),
    ({"avg_size": 3000, "algorithm": "fastcdc"}, "power of two"),
    ({"max_size": 1 << 40}, "max"),
    ({"algorithm": "kfastcdc"}, "key"),
    ({"key": b"short"}, "32 bytes"),
    ({"key": "zz" * 32}, "key"),
    ({"key": 12}, "key must be"),
    ({"algorithm": "ultracdc", "key": bytes(32)}, "key"),
    ({"digest": "md5"}, "md5"),
    ({"digest": 3}, "digest must be"),
])
def test_invalid_options_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        cdc_chunkers.chunk(DATA, **kwargs)
    if "digest" not in kwargs:
        with pytest.raises(ValueError, match=match):
            cdc_chunkers.Chunker(**kwargs)
        with pytest.raises(ValueError, match=match):
            cdc_chunkers.iter_chunks(DATA, **kwargs)


def test_a_missing_path_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        cdc_chunkers.iter_chunks(tmp_path / "missing")
    assert e.value.errno == errno.ENOENT and e.value.filename == str(tmp_path / "missing")


def test_a_directory_raises_os_error_naming_it(tmp_path):
    with pytest.raises(OSError, match=str(tmp_path)):
        list(cdc_chunkers.iter_chunks(tmp_path))


class FailingFile(io.RawIOBase):
    """Delivers `good` bytes, then fails."""

    def __init__(self, good, error):
        self.left = good
        self.error = error

    def readinto(self, b):
        if self.left == 0:
            raise self.error
        n = min(len(b), self.left)
        b[:n] = bytes(n)
        self.left -= n
        return n


def test_a_failing_reader_raises_its_error_and_no_partial_chunk():
    c = cdc_chunkers.iter_chunks(FailingFile(100000, OSError(errno.EIO, "disk on fire")), "fastcdc")
    seen = 0
    with pytest.raises(OSError, match="disk on fire"):
        for _, view in c:
            seen += len(view)
    assert seen < 100000  # the bytes buffered before the failure never came out as a chunk
    with pytest.raises(OSError, match="disk on fire"):  # and it stays failed
        next(c)


def test_a_reader_returning_too_much_is_an_io_error():
    class Liar(io.RawIOBase):
        def readinto(self, b):
            return len(b) + 1

    with pytest.raises(OSError, match="readinto returned"):
        list(cdc_chunkers.iter_chunks(Liar()))


def test_an_exception_from_the_reader_passes_through():
    with pytest.raises(KeyError):
        list(cdc_chunkers.iter_chunks(FailingFile(10, KeyError("x"))))


def test_a_source_of_the_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match="source must be"):
        cdc_chunkers.iter_chunks(12)
    with pytest.raises(TypeError):
        cdc_chunkers.chunk("text is not bytes")


def test_generate_rejects_a_bad_spec():
    with pytest.raises(ValueError):
        cdc_chunkers.generate("nonsense:1")


def test_analyze_errors(tmp_path):
    with pytest.raises(OSError, match="missing"):
        cdc_chunkers.analyze([str(tmp_path / "missing")])
    with pytest.raises(ValueError, match="unknown algorithm"):
        cdc_chunkers.analyze([str(tmp_path)], ["nope"])
    with pytest.raises(ValueError, match="none"):
        cdc_chunkers.analyze([str(tmp_path)], digest="none")
    with pytest.raises(ValueError, match="jobs"):
        cdc_chunkers.analyze([str(tmp_path)], jobs=-1)
    with pytest.raises(ValueError, match="empty"):
        cdc_chunkers.analyze([])


class BytesPath:
    """An os.PathLike of bytes (as os.DirEntry of os.scandir(b"dir"))."""

    def __init__(self, path):
        self.path = path

    def __fspath__(self):
        return self.path


def test_a_path_with_a_nul_byte_is_refused_as_open_does(tmp_path):
    secret = tmp_path / "secret"
    secret.write_bytes(DATA)
    cut = str(tmp_path / "secret\0.txt")
    with pytest.raises(ValueError, match="embedded null byte"):
        open(cut, "rb")
    with pytest.raises(ValueError, match="embedded null byte"):
        cdc_chunkers.iter_chunks(cut)
    with pytest.raises(ValueError, match="embedded null byte"):
        cdc_chunkers.Chunker().reset(BytesPath(cut.encode()))
    with pytest.raises(ValueError, match="embedded null byte"):
        cdc_chunkers.analyze(cut)
    with pytest.raises(ValueError, match="embedded null byte"):
        cdc_chunkers.analyze([str(secret), cut])
    with pytest.raises(ValueError, match="embedded null byte"):
        cdc_chunkers.dupes([cut])


def test_non_utf8_names_are_chunked_by_path(tmp_path):
    raw = os.fsencode(str(tmp_path)) + b"/caf\xe9.bin"  # Latin-1, not UTF-8
    with open(raw, "wb") as f:
        f.write(DATA)
    escaped = os.fsdecode(raw)  # a str with a surrogate escape
    want = [(o, DATA[o:o + n]) for o, n in cdc_chunkers.chunk(DATA)]
    for path in (BytesPath(raw), escaped, pathlib.Path(escaped)):
        assert [(o, bytes(v)) for o, v in cdc_chunkers.iter_chunks(path)] == want
    # bytes are data to chunk, as everywhere; analyze() and dupes() take only paths
    assert [bytes(v) for _, v in cdc_chunkers.iter_chunks(raw)] == [raw]
    report = cdc_chunkers.analyze(escaped)
    assert report["files"] == 1 and report["errors"] == []
    assert cdc_chunkers.analyze(raw)["bytes"] == len(DATA)
    missing = os.fsencode(str(tmp_path)) + b"/gone\xff"
    with pytest.raises(FileNotFoundError) as e:
        cdc_chunkers.iter_chunks(BytesPath(missing))
    assert e.value.filename == missing


@pytest.mark.parametrize("path, error, match", [
    (12, TypeError, "path"),
    ([b"a", 3], TypeError, "path"),
])
def test_analyze_paths_of_the_wrong_type(path, error, match):
    with pytest.raises(error, match=match):
        cdc_chunkers.analyze(path)


@pytest.mark.parametrize("returned, error, match", [
    ("12", TypeError, r"readinto\(\) returned str"),
    (1.5, TypeError, r"readinto\(\) returned float"),
    (1 << 80, OSError, "readinto returned"),
    (-1, OSError, "readinto returned"),
])
def test_a_reader_returning_a_non_count_is_named(returned, error, match):
    class Odd(io.RawIOBase):
        def readinto(self, b):
            return returned

    with pytest.raises(error, match=match):
        list(cdc_chunkers.iter_chunks(Odd()))
