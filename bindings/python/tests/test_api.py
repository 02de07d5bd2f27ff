# SPDX-License-Identifier: Apache-2.0
"""The API as users of other chunking packages expect it: independent
chunks, introspectable signatures, positional sizes, indexable results,
digests while streaming, and zero-copy views that never show other bytes."""
import ast
import hashlib
import inspect
import io
import pathlib

import numpy as np
import pytest

import cdc_chunkers

DATA = cdc_chunkers.generate("splitmix64:31:900001")
SIZES = ("fastcdc", 2048, 8192, 65536)
WANT = cdc_chunkers.chunk(DATA, "fastcdc", min_size=2048, avg_size=8192, max_size=65536)


def expected():
    return [(o, DATA[o:o + n]) for o, n in WANT]


def sources(tmp_path):
    path = tmp_path / "in.bin"
    path.write_bytes(DATA)
    return [str(path), path, io.BytesIO(DATA), DATA, bytearray(DATA)]


def test_iteration_yields_independent_bytes_by_default(tmp_path):
    for source in sources(tmp_path):
        got = list(cdc_chunkers.iter_chunks(source, *SIZES))  # kept whole, no copy made here
        assert all(type(data) is bytes for _, data in got)
        assert got == expected()


def test_a_stale_view_raises_instead_of_showing_other_bytes():
    c = cdc_chunkers.iter_chunks(io.BytesIO(DATA), *SIZES, views=True)
    kept = []
    for offset, view in c:
        assert isinstance(view, memoryview) and view.readonly and view.tobytes() == DATA[offset:offset + len(view)]
        kept.append(view)
    assert len(kept) == len(WANT)
    for view in kept:
        with pytest.raises(ValueError, match="released"):
            bytes(view)


@pytest.mark.parametrize("keep", [lambda v: v[1:100], lambda v: np.frombuffer(v, dtype=np.uint8)])
def test_a_live_slice_or_array_of_a_view_stops_the_next_step(keep):
    c = cdc_chunkers.iter_chunks(io.BytesIO(DATA), *SIZES, views=True)
    offset, view = next(c)
    whole = bytes(view)
    part = keep(view)
    first = bytes(part)
    with pytest.raises(BufferError, match="previous chunk"):
        next(c)
    assert bytes(part) == first  # untouched: the step did not happen
    del part, view
    rest = [(o, bytes(v)) for o, v in c]  # goes on once released
    assert [(offset, whole)] + rest == expected()


def test_views_of_a_buffer_source_stay_valid():
    got = list(cdc_chunkers.iter_chunks(DATA, *SIZES, views=True))
    assert all(v.obj is DATA for _, v in got)
    assert [(o, bytes(v)) for o, v in got] == expected()


def test_sizes_are_positional_as_in_fastcdc_py(tmp_path):
    by_name = dict(min_size=2048, avg_size=8192, max_size=65536)
    a = cdc_chunkers.chunk(DATA, *SIZES)
    np.testing.assert_array_equal(a.lengths, WANT.lengths)
    assert cdc_chunkers.Chunker(*SIZES).max_size == 65536
    assert [o for o, _ in cdc_chunkers.iter_chunks(DATA, *SIZES)] == list(WANT.offsets)
    path = tmp_path / "f"
    path.write_bytes(DATA)
    assert cdc_chunkers.analyze(path, "fastcdc", 2048, 8192, 65536) is not None
    assert (cdc_chunkers.analyze(path, "fastcdc", 2048, 8192, 65536)["algorithms"][0]["chunks"]
            == cdc_chunkers.analyze(path, "fastcdc", **by_name)["algorithms"][0]["chunks"] == len(WANT))
    with pytest.raises(TypeError):
        cdc_chunkers.chunk(DATA, "kfastcdc", 2048, 8192, 65536, "01" * 32)  # the rest by name only


def test_chunks_are_indexable_and_sliceable():
    c = cdc_chunkers.chunk(DATA, *SIZES, digest="blake3")
    pairs = list(c)
    assert c[0] == pairs[0] and c[-1] == pairs[-1] and c[np.int64(2)] == pairs[2]
    assert all(type(x) is int for x in c[1])
    with pytest.raises(IndexError):
        c[len(c)]
    with pytest.raises(IndexError):
        c[-len(c) - 1]
    with pytest.raises(TypeError):
        c["x"]
    for sl in (slice(2, 7), slice(None, None, 3), slice(-4, None), slice(5, 2)):
        part = c[sl]
        assert isinstance(part, cdc_chunkers.Chunks) and list(part) == pairs[sl]
        np.testing.assert_array_equal(part.digests, c.digests[sl])
        assert part.algorithm == c.algorithm and part.digest == "blake3"
    assert c[3:5].offsets.base is not None  # a view of the arrays, no copy


@pytest.mark.parametrize("digest", ["blake3", "sha256", "xxh3"])
def test_streaming_yields_each_chunks_digest(tmp_path, digest):
    whole = cdc_chunkers.chunk(DATA, *SIZES, digest=digest)
    for source in sources(tmp_path):
        got = list(cdc_chunkers.iter_chunks(source, *SIZES, digest=digest))
        assert [(o, d) for o, _, d in got] == [(o, whole.digests[i].tobytes()) for i, (o, _) in enumerate(whole)]
        assert b"".join(data for _, data, _ in got) == DATA
    if digest == "sha256":
        assert all(d == hashlib.sha256(data).digest() for _, data, d in got)
    c = cdc_chunkers.Chunker(*SIZES, digest=digest, views=True)
    assert c.digest == digest and c.views
    assert [d for _, _, d in c.reset(io.BytesIO(DATA))] == [d for _, _, d in got]


def stub_signatures():
    """name -> (parameter names, kinds, defaults) from __init__.pyi."""
    stub = pathlib.Path(cdc_chunkers.__file__).with_name("__init__.pyi")
    tree = ast.parse(stub.read_text())
    out = {}

    def params(fn):
        a = fn.args
        names = [p.arg for p in a.posonlyargs + a.args] + [p.arg for p in a.kwonlyargs]
        kinds = ["positional"] * len(a.posonlyargs + a.args) + ["keyword"] * len(a.kwonlyargs)
        defaults = [None] * (len(a.args) - len(a.defaults)) + [ast.literal_eval(d) for d in a.defaults]
        defaults += [None if d is None else ast.literal_eval(d) for d in a.kw_defaults]
        return names, kinds, defaults

    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = params(node)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and not item.decorator_list:
                    out[f"{node.name}.{item.name}"] = params(item)
    return out


def runtime(sig, drop_self):
    ps = list(sig.parameters.values())[1 if drop_self else 0:]
    kinds = ["keyword" if p.kind == p.KEYWORD_ONLY else "positional" for p in ps]
    defaults = [None if p.default is p.empty else p.default for p in ps]
    return [p.name for p in ps], kinds, defaults


@pytest.mark.parametrize("name", ["chunk", "iter_chunks", "analyze", "dupes", "algorithms", "generate",
                                  "Chunker.__init__", "Chunker.reset", "Chunker.chunk", "Chunker.close"])
def test_signatures_are_introspectable_and_equal_the_stubs(name):
    obj = cdc_chunkers
    for part in name.split("."):
        obj = getattr(obj, part)
    sig = inspect.signature(obj)
    stub = stub_signatures()[name]
    assert runtime(sig, drop_self=False)[0][:1] != ["self"] or "." in name
    assert runtime(sig, drop_self="." in name) == (stub[0][1:], stub[1][1:], stub[2][1:]) if "." in name \
        else runtime(sig, drop_self=False) == stub
    if name == "Chunker.__init__":
        assert str(inspect.signature(cdc_chunkers.Chunker)).startswith("(algorithm='fastcdc-v1.0.0', min_size=0")
