# SPDX-License-Identifier: Apache-2.0
"""The package: names, docstrings for help(), type stubs."""
import ast
import pathlib
import pydoc

import cdc_chunkers


def test_every_public_name_has_a_docstring():
    for name in cdc_chunkers.__all__:
        obj = getattr(cdc_chunkers, name)
        if name != "__version__":
            assert obj.__doc__ and len(obj.__doc__.strip()) > 40, name


def test_help_shows_signatures_and_options():
    text = pydoc.render_doc(cdc_chunkers.chunk, renderer=pydoc.plaintext)
    assert "chunk(data, algorithm='fastcdc-v1.0.0', min_size=0, avg_size=0, max_size=0, *, key=None" in text
    assert "buffer protocol" in text
    text = pydoc.render_doc(cdc_chunkers, renderer=pydoc.plaintext)
    for name in ("chunk", "iter_chunks", "Chunker", "analyze", "algorithms"):
        assert name in text


def test_the_stubs_declare_every_public_name():
    stub = pathlib.Path(cdc_chunkers.__file__).with_name("__init__.pyi")
    assert stub.with_name("py.typed").exists()
    tree = ast.parse(stub.read_text())
    declared = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    declared |= {t.id for n in tree.body if isinstance(n, ast.AnnAssign) for t in [n.target]}
    assert set(cdc_chunkers.__all__) <= declared


def test_algorithms_lists_every_name_with_its_defaults():
    names = [a["name"] for a in cdc_chunkers.algorithms()]
    assert "fastcdc-v1.0.0" in names and "kfastcdc" in names and len(names) == len(set(names))
    fixed = next(a for a in cdc_chunkers.algorithms() if a["name"] == "fixed-v1.0.0")
    assert fixed["key"] == "no" and fixed["min"] == fixed["avg"] == fixed["max"]


def test_version():
    assert cdc_chunkers.__version__.count(".") == 2
