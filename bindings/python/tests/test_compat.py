# SPDX-License-Identifier: Apache-2.0
"""The names that reproduce other projects' chunkers (fastcdc-rs, restic,
borg, casync), with their parameters: every case of
tests/vectors/compat through chunk() and iter_chunks(), the parameters
as the C++ library resolves them, and the cuts of `cdc chunk` (the C++
library) for parameters the vectors do not hold."""
import csv
import io
import subprocess

import numpy as np
import pytest

import cdc_chunkers
from conftest import compat_cases, compat_kwargs, input_bytes

CASES = compat_cases()
NAMES = ["fastcdc-rs-v2020", "fastcdc-rs-v2016", "fastcdc-rs-ronomon", "restic-rabin", "borg-buzhash",
         "casync-buzhash"]


def case_id(c):
    params = ",".join(f"{k}={v}" for k, v in c["params"].items())
    return f'{c["algorithm"]}/{params}/{c["input"]}'


def test_the_vectors_cover_every_compatibility_name():
    assert {c["algorithm"] for c in CASES} == set(NAMES)
    assert any("poly" in c["params"] for c in CASES) and any("window" in c["params"] for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_chunk_and_iter_chunks_match_the_origin(case):
    data = input_bytes(case["input"])
    kw = compat_kwargs(case)
    chunks = cdc_chunkers.chunk(data, case["algorithm"], **kw)
    np.testing.assert_array_equal(chunks.lengths, np.array(case["lengths"], dtype=np.uint64))
    # a stream read in pieces of a size that varies with the case
    step = [1, 997, 4096, 65537][CASES.index(case) % 4]
    step = max(step, len(data) // 2000)
    stream = io.BufferedReader(io.BytesIO(data), buffer_size=step)
    got = [len(view) for _, view in cdc_chunkers.iter_chunks(stream, case["algorithm"], **kw)]
    assert got == case["lengths"]


def test_parameters_in_use():
    c = cdc_chunkers.Chunker("fastcdc-rs-v2020", level=2, seed=7)
    assert c.parameters == {"level": 2, "seed": 7}
    assert cdc_chunkers.Chunker("fastcdc-rs-v2020").parameters == {"level": 1, "seed": 0}
    assert cdc_chunkers.Chunker("restic-rabin").parameters == {"polynomial": 0x3DA3358B4DC173}
    assert cdc_chunkers.Chunker("borg-buzhash", window=1023).parameters == {"seed": 0, "window": 1023}
    assert cdc_chunkers.Chunker("fastcdc-v1.0.0").parameters == {}
    info = {a["name"]: a for a in cdc_chunkers.algorithms()}
    assert set(info["borg-buzhash"]["parameters"]) == {"seed", "window"}
    assert info["restic-rabin"]["parameters"]["poly"]["default"] == 0x3DA3358B4DC173


@pytest.mark.parametrize("name,kw,flags", [
    ("fastcdc-rs-v2020", {"level": 3, "seed": 2**64 - 1}, ["--level", "3", "--seed", str(2**64 - 1)]),
    ("fastcdc-rs-v2016", {"level": 0, "avg_size": 16384}, ["--level", "0", "--avg", "16384"]),
    ("restic-rabin", {"polynomial": 0x20E7F3380B43FD, "min_size": 65536, "avg_size": 262144,
                      "max_size": 1048576}, ["--poly", "20E7F3380B43FD", "--min", "65536", "--avg", "262144",
                                             "--max", "1048576"]),
    ("borg-buzhash", {"seed": 0xDEADBEEF, "window": 511, "min_size": 16384, "avg_size": 65536, "max_size": 262144},
     ["--seed", str(0xDEADBEEF), "--window", "511", "--min", "16384", "--avg", "65536", "--max", "262144"]),
    ("casync-buzhash", {}, []),
])
def test_cuts_equal_cdc_chunk(cdc_tool, tmp_path, name, kw, flags):
    data = cdc_chunkers.generate("splitmix64:77:3000000")
    path = tmp_path / "input.bin"
    path.write_bytes(data)
    out = subprocess.run([cdc_tool, "chunk", "--csv", "--digest", "blake3", "-a", name, *flags, str(path)],
                         check=True, capture_output=True, text=True).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    chunks = cdc_chunkers.chunk(data, name, digest="blake3", **kw)
    assert len(rows) > 3
    assert [int(r["offset"]) for r in rows] == chunks.offsets.tolist()
    assert [int(r["length"]) for r in rows] == chunks.lengths.tolist()
    assert [r["digest"] for r in rows] == [bytes(d).hex() for d in chunks.digests]
    with cdc_chunkers.Chunker(name, **kw) as c:
        assert [len(v) for _, v in c.reset(str(path))] == chunks.lengths.tolist()


@pytest.mark.parametrize("name,kw,words", [
    ("fastcdc-v1.0.0", {"polynomial": 0x3DA3358B4DC173}, ["polynomial", "restic-rabin"]),
    ("restic-rabin", {"polynomial": 0x3DA3358B4DC172}, ["polynomial"]),  # reducible (divisible by x)
    ("fastcdc-rs-v2020", {"level": 4}, ["level"]),
    ("borg-buzhash", {"window": 0}, ["window"]),
    ("borg-buzhash", {"seed": 2**32}, ["seed"]),
    ("fastcdc-rs-v2020", {"seed": -1}, ["seed"]),
    ("fastcdc-rs-v2020", {"seed": 2**64}, ["seed"]),
    ("fastcdc-rs-v2020", {"level": "1"}, ["level", "int"]),
    ("fastcdc-rs-v2020", {"level": True}, ["level", "int"]),
])
def test_parameter_errors(name, kw, words):
    for call in (lambda: cdc_chunkers.chunk(b"x" * 100, name, **kw),
                 lambda: cdc_chunkers.Chunker(name, **kw),
                 lambda: cdc_chunkers.iter_chunks(b"", name, **kw)):
        with pytest.raises(ValueError) as e:
            call()
        for w in words:
            assert w in str(e.value)


def test_analyze_gives_each_parameter_to_the_names_that_take_it(tmp_path):
    (tmp_path / "a.bin").write_bytes(cdc_chunkers.generate("splitmix64:5:400000"))
    report = cdc_chunkers.analyze(str(tmp_path), ["restic-rabin", "fastcdc-v1.0.0"], polynomial=0x20E7F3380B43FD,
                                  min_size=65536, avg_size=131072, max_size=262144, jobs=1)
    rabin = cdc_chunkers.chunk(cdc_chunkers.generate("splitmix64:5:400000"), "restic-rabin",
                               polynomial=0x20E7F3380B43FD, min_size=65536, avg_size=131072, max_size=262144)
    got = {a["algorithm"]: a["chunks"] for a in report["algorithms"]}
    assert got["restic-rabin"] == len(rabin)
    with pytest.raises(ValueError, match="window"):
        cdc_chunkers.analyze(str(tmp_path), ["restic-rabin", "fastcdc-v1.0.0"], window=100)
