# SPDX-License-Identifier: Apache-2.0
"""dupes() reports what `cdc dupes --json` prints for the same tree."""
import json
import os
import subprocess

import pytest

import cdc_chunkers


@pytest.fixture
def tree(tmp_path):
    a = cdc_chunkers.generate("splitmix64:31:100000")
    b = cdc_chunkers.generate("splitmix64:32:50000")
    (tmp_path / "d").mkdir()
    (tmp_path / "a1").write_bytes(a)
    (tmp_path / "d" / "a2").write_bytes(a)
    (tmp_path / "d" / "a3").write_bytes(a)
    (tmp_path / "b1").write_bytes(b)
    (tmp_path / "d" / "b2").write_bytes(b)
    (tmp_path / "d" / "b-other").write_bytes(b[:-1] + b"!")  # same size, other bytes
    os.link(tmp_path / "a1", tmp_path / "d" / "a1-link")
    (tmp_path / "e1").write_bytes(b"")
    (tmp_path / "e2").write_bytes(b"")
    return tmp_path


@pytest.mark.parametrize("mode, extra", [("auto", []), ("hash", ["--digest", "xxh3"]), ("compare", ["--min-size", "0"])])
def test_dupes_equals_cdc_dupes_json(tree, cdc_tool, mode, extra):
    cli = json.loads(subprocess.run([cdc_tool, "dupes", "--json", "-q", "--mode", mode, *extra, str(tree)],
                                    check=True, capture_output=True, text=True).stdout)
    kwargs = {"mode": mode}
    if "--digest" in extra:
        kwargs["hash"] = "xxh3"
    if "--min-size" in extra:
        kwargs["min_size"] = 0
    py = cdc_chunkers.dupes(tree, **kwargs)
    assert py.pop("warnings") == []
    assert py == cli
    sizes = sorted(g["size"] for g in py["groups"])
    assert sizes == ([0, 50000, 100000] if mode == "compare" else [50000, 100000])
    assert py["linked"][0]["files"] == [str(tree / "a1"), str(tree / "d" / "a1-link")]


def test_dupes_excludes(tree):
    both = cdc_chunkers.dupes(tree, exclude="/d")
    assert [g["files"] for g in both["groups"]] == []  # a1 alone, b1 alone
    (tree / "d" / ".nobackup").write_bytes(b"")
    assert cdc_chunkers.dupes(tree, exclude_if_present=[".nobackup"]) == both
    kept = cdc_chunkers.dupes(tree, exclude=["/d/*", "!a3"])
    assert [g["files"] for g in kept["groups"]] == [[str(tree / "a1"), str(tree / "d" / "a3")]]


def test_dupes_keeps_paths_that_are_not_utf8(tmp_path):
    name = os.fsdecode(b"caf\xe9")  # latin-1 bytes: not UTF-8
    (tmp_path / name).write_bytes(b"same")
    (tmp_path / "other").write_bytes(b"same")
    files = cdc_chunkers.dupes([str(tmp_path)])["groups"][0]["files"]
    assert str(tmp_path / name) in files
    assert os.path.exists(os.fsencode(str(tmp_path / name)))


def test_dupes_errors(tmp_path):
    with pytest.raises(ValueError, match="missing"):
        cdc_chunkers.dupes(tmp_path / "missing")
    with pytest.raises(ValueError, match="mode"):
        cdc_chunkers.dupes(tmp_path, mode="fast")
    with pytest.raises(ValueError, match="none"):
        cdc_chunkers.dupes(tmp_path, digest="none")
    with pytest.raises(ValueError, match="disagree"):
        cdc_chunkers.dupes(tmp_path, digest="xxh3", hash="sha256")
    with pytest.raises(ValueError, match="min_size"):
        cdc_chunkers.dupes(tmp_path, min_size=-1)


def test_dupes_digest_names_as_the_command_line(tmp_path):
    # digest= is the name of chunk() and of cdc dupes --digest; hash= (the
    # first name) still works, with a DeprecationWarning.
    (tmp_path / "a").write_bytes(b"x" * 5000)
    (tmp_path / "b").write_bytes(b"x" * 5000)
    for d in ("blake3", "sha256", "xxh3"):
        r = cdc_chunkers.dupes(tmp_path, mode="hash", digest=d)
        assert r["summary"]["groups"] == 1
    with pytest.warns(DeprecationWarning, match="digest"):
        r = cdc_chunkers.dupes(tmp_path, mode="hash", hash="xxh3")
    assert r["summary"]["groups"] == 1
