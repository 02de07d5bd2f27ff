#!/usr/bin/env bash
# pip install of the Python package from the source tree, offline (the
# README's second setup): a venv that sees Debian's numpy, pip with
# --no-build-isolation --no-index (nothing downloaded), the module built in
# the given build folder (CDC_PYTHON_BUILD_DIR: no second full build here);
# then, from another directory, the installed package (not the source tree's)
# imports, chunks, and ships its type stubs.
#   pip_install_test.sh PYTHON BUILD_DIR SOURCE_DIR
set -euo pipefail
python="$1"; build=$(cd "$2" && pwd); src=$(cd "$3" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$python" -m venv --system-site-packages "$tmp/venv"
CDC_PYTHON_BUILD_DIR="$build" "$tmp/venv/bin/pip" install -q --no-build-isolation --no-index \
    --no-cache-dir --disable-pip-version-check "$src/bindings/python"
cd "$tmp"
env -u PYTHONPATH "$tmp/venv/bin/python" - "$tmp/venv" <<'PY'
import importlib.metadata, pathlib, sys
import cdc_chunkers
license = importlib.metadata.metadata("cdc_chunkers")["License"]
assert license == "Apache-2.0", f"License: {license!r}"
venv = pathlib.Path(sys.argv[1]).resolve()
where = pathlib.Path(cdc_chunkers.__file__).resolve()
assert venv in where.parents, f"imported {where}, not the venv's package"
assert where.with_name("__init__.pyi").is_file() and where.with_name("py.typed").is_file()
c = cdc_chunkers.chunk(cdc_chunkers.generate("splitmix64:1:1000000"), "fastcdc-v1.0.0", digest="blake3")
assert len(c) > 10 and int(c.lengths.sum()) == 1000000 and c.digests.shape == (len(c), 32)
print(f"pip install: cdc_chunkers {cdc_chunkers.__version__} from {where.parent}, {len(c)} chunks")
PY
"$tmp/venv/bin/pip" uninstall -q -y cdc_chunkers
