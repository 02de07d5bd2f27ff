# SPDX-License-Identifier: Apache-2.0
"""analyze() returns what `cdc analyze --json` prints for the same tree."""
import json
import subprocess

import pytest

import cdc_chunkers

# Figures that are timings: they differ between any two runs.
TIMINGS = {"chunk_mb_s", "wall_mb_s", "cut_seconds", "hash_seconds", "wall_seconds"}


def strip_timings(doc):
    if isinstance(doc, dict):
        return {k: strip_timings(v) for k, v in doc.items() if k not in TIMINGS}
    if isinstance(doc, list):
        return [strip_timings(v) for v in doc]
    return doc


@pytest.fixture
def tree(tmp_path):
    a = cdc_chunkers.generate("splitmix64:11:400000")
    b = cdc_chunkers.generate("text:12:300000")
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.bin").write_bytes(a)
    (tmp_path / "sub" / "a-copy.bin").write_bytes(a)
    (tmp_path / "sub" / "b.txt").write_bytes(b)
    (tmp_path / "sub" / "ab.bin").write_bytes(a[:200000] + b)
    (tmp_path / "empty").write_bytes(b"")
    return tmp_path


@pytest.mark.parametrize("algorithms, extra, kwargs", [
    ("fastcdc", [], {}),
    ("fastcdc-v1.0.0,ultracdc,jc-v1.1.0", ["--avg", "4096", "--digest", "sha256", "--jobs", "2"],
     {"avg_size": 4096, "digest": "sha256", "jobs": 2}),
    ("kfastcdc,fastcdc", ["--key", "01" * 32, "--digest", "xxh3", "--jobs", "1"],
     {"key": "01" * 32, "digest": "xxh3", "jobs": 1}),
])
def test_analyze_equals_cdc_analyze_json(tree, cdc_tool, algorithms, extra, kwargs):
    cli = json.loads(subprocess.run([cdc_tool, "analyze", "--json", "-q", "-a", algorithms, *extra, str(tree)],
                                    check=True, capture_output=True, text=True).stdout)
    py = cdc_chunkers.analyze(str(tree), algorithms.split(","), **kwargs)
    if "jobs" not in kwargs:
        assert py["jobs"] >= 1
        py["jobs"] = cli["jobs"]  # 0 = every core; the count is the machine's
    assert py.keys() == cli.keys()
    assert [a.keys() for a in py["algorithms"]] == [a.keys() for a in cli["algorithms"]]
    assert strip_timings(py) == strip_timings(cli)
    assert py["files"] == 5 and py["bytes"] == 400000 * 2 + 300000 + 500000
    first = py["algorithms"][0]
    assert first["distinct_bytes"] < first["bytes"]  # the copy deduplicates


def test_analyze_excludes_as_cdc_analyze(tree, cdc_tool, tmp_path_factory):
    patterns = tmp_path_factory.mktemp("p") / "patterns"
    patterns.write_text("# the copy\na-copy.bin\n")
    (tree / "sub" / "CACHEDIR.TAG").write_bytes(b"Signature: 8a477f597d28d172789f06886806bc55")
    args = ["--exclude", "*.bin", "--exclude", "!/sub/ab.bin", "--exclude-file", str(patterns)]
    cli = json.loads(subprocess.run([cdc_tool, "analyze", "--json", "-q", *args, str(tree)],
                                    check=True, capture_output=True, text=True).stdout)
    py = cdc_chunkers.analyze(tree, exclude=["*.bin", "!/sub/ab.bin"], exclude_file=patterns)
    assert strip_timings({**py, "jobs": 0}) == strip_timings({**cli, "jobs": 0})
    assert py["files"] == 4 and py["excluded"] == 2  # a.bin, sub/a-copy.bin
    assert cdc_chunkers.analyze(tree, exclude_caches=True)["files"] == 2  # sub left out, its tag too
    assert cdc_chunkers.analyze(tree, exclude_if_present="b.txt", exclude=b"empty")["excluded"] == 2
    with pytest.raises(ValueError, match="unterminated"):
        cdc_chunkers.analyze(tree, exclude="[x")
    with pytest.raises(ValueError, match="exclude-if-present"):
        cdc_chunkers.analyze(tree, exclude_if_present=["a/b"])
    with pytest.raises(OSError):
        cdc_chunkers.analyze(tree, exclude_file=tree / "no-such-file")
    with pytest.raises(TypeError):
        cdc_chunkers.analyze(tree, exclude=3)


def test_analyze_takes_paths_and_lists(tree):
    one = cdc_chunkers.analyze(tree / "a.bin")  # os.PathLike
    two = cdc_chunkers.analyze([str(tree / "a.bin"), tree / "sub" / "a-copy.bin"])
    assert one["files"] == 1 and two["files"] == 2
    assert two["algorithms"][0]["distinct_bytes"] == one["algorithms"][0]["bytes"]
