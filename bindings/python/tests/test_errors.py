"""Errors: ValueError for options, OSError for I/O, TypeError for sources."""
import errno
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
