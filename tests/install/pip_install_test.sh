#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# pip install of the Python package from the source tree, offline (the
# README's setup): a venv that sees Debian's numpy, pip with
# --no-build-isolation --no-index (nothing downloaded).
#  1. Against an installed library (this build's, installed into a prefix
#     by cmake --install; CDC_PREFIX names it): only the module is compiled
#     (bindings/python as a project of its own), with its progress shown
#     (pip -v), and nothing is written into the source tree.
#  2. From a configured build folder of the project (CDC_PYTHON_BUILD_DIR):
#     the module built there is installed.
# Each time, from another directory, the installed package (not the source
# tree's) imports, chunks, and ships its type stubs.
#   pip_install_test.sh PYTHON BUILD_DIR SOURCE_DIR
set -euo pipefail
python="$1"; build=$(cd "$2" && pwd); src=$(cd "$3" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pip_install() {  # VENV ENV...
  local venv="$1"; shift
  "$python" -m venv --system-site-packages "$venv"
  env "$@" "$venv/bin/pip" install -v --no-build-isolation --no-index --no-cache-dir \
      --disable-pip-version-check "$src/bindings/python"
}
check_venv() {  # VENV
  (cd "$tmp" && env -u PYTHONPATH "$1/bin/python" - "$1" <<'PY'
import importlib.metadata, pathlib, sys
import cdc_chunkers
license = importlib.metadata.metadata("cdc_chunkers")["License"]
assert license == "Apache-2.0", f"License: {license!r}"
venv = pathlib.Path(sys.argv[1]).resolve()
where = pathlib.Path(cdc_chunkers.__file__).resolve()
assert venv in where.parents, f"imported {where}, not the venv's package"
assert where.with_name("__init__.pyi").is_file() and where.with_name("py.typed").is_file()
assert (where.parent / "distributed" / "__main__.py").is_file()
c = cdc_chunkers.chunk(cdc_chunkers.generate("splitmix64:1:1000000"), "fastcdc-v1.0.0", digest="blake3")
assert len(c) > 10 and int(c.lengths.sum()) == 1000000 and c.digests.shape == (len(c), 32)
print(f"pip install: cdc_chunkers {cdc_chunkers.__version__} from {where.parent}, {len(c)} chunks")
PY
  )
}
# What pip wrote under the package's sources (none of it may be there).
written() { find "$src/bindings/python" "$src/src/report" -newer "$tmp/marker" -print | sort; }

# 1. The module alone, against an installed library.
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
touch "$tmp/marker"; sleep 1
start=$(date +%s)
pip_install "$tmp/venv1" CDC_PREFIX="$tmp/prefix" >"$tmp/log1" 2>&1 || { cat "$tmp/log1"; exit 1; }
echo "pip install against the installed library: $(( $(date +%s) - start )) s"
grep -q "configuring the module against an installed cdc library" "$tmp/log1"
grep -q "cdc_chunkers: the cdc library .* of $tmp/prefix" "$tmp/log1"
if grep -q "building the library first" "$tmp/log1"; then echo "the library was built again"; exit 1; fi
# CMake's own progress: each file of the module, none of the library.
grep -E '^\s*\[[0-9]+/[0-9]+\] .*cdc_python\.dir/' "$tmp/log1" >/dev/null \
  || { echo "no compile progress in pip -v's output"; cat "$tmp/log1"; exit 1; }
if grep -E '^\s*\[[0-9]+/[0-9]+\] .*src/(algorithms|kernels|corpus|store)/' "$tmp/log1"; then
  echo "library files were compiled"; exit 1
fi
if [[ -n "$(written)" ]]; then echo "pip install wrote into the source tree:"; written; exit 1; fi
check_venv "$tmp/venv1"

# 2. The module of a configured build folder of the whole project.
pip_install "$tmp/venv2" CDC_PYTHON_BUILD_DIR="$build" >"$tmp/log2" 2>&1 || { cat "$tmp/log2"; exit 1; }
check_venv "$tmp/venv2"
if [[ -n "$(written)" ]]; then echo "pip install wrote into the source tree:"; written; exit 1; fi
"$tmp/venv2/bin/pip" uninstall -q -y cdc_chunkers
