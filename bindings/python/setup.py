# SPDX-License-Identifier: Apache-2.0
"""pip install for cdc_chunkers: the module alone, built by CMake from
bindings/python (a project of its own) against the cdc library:

  1. an installed library (find_package(cdc); CDC_PREFIX or CMAKE_PREFIX_PATH
     names its prefix if it is not in a system one), else
  2. a library built here first (the project's library targets only: no
     tools, tests or shared library), installed into the build folder.
  CDC_PYTHON_BUILD_DIR instead names a configured build folder of the whole
  project (scripts/build.sh release: build/): the module is built there.

    python3 -m venv --system-site-packages .venv    # Debian's numpy
    .venv/bin/pip install -v --no-build-isolation ./bindings/python

-v shows the progress (each step, then CMake's [n/N] lines: pip hides a
build's output without it). --no-build-isolation lets pip use the
setuptools, wheel and pybind11 already installed (Debian:
python3-setuptools python3-wheel python3-pybind11), so nothing is
downloaded. Nothing is written into the source tree: the build folder is a
temporary one (CDC_PYTHON_BUILD_BASE names one to keep, for faster
rebuilds). CDC_CMAKE_ARGS adds CMake arguments; CDC_JOBS sets the jobs.
"""
import atexit
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
START = time.monotonic()


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(cdc VERSION ([0-9.]+)", text).group(1)


def build_base():
    """Where setuptools builds: outside the source tree."""
    given = os.environ.get("CDC_PYTHON_BUILD_BASE")
    if given:
        return str(pathlib.Path(given).resolve())
    base = tempfile.mkdtemp(prefix="cdc_chunkers-build-")
    atexit.register(shutil.rmtree, base, ignore_errors=True)
    return base


def step(text):
    print(f"cdc_chunkers: [{time.monotonic() - START:5.1f} s] {text}", flush=True)


def run(args, **kwargs):
    print("+ " + shlex.join(str(a) for a in args), flush=True)
    return subprocess.run([str(a) for a in args], **kwargs)


def generator_args():
    args = ["-GNinja"] if shutil.which("ninja") else []
    if shutil.which("ccache"):
        args += ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
    return args


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        jobs = os.environ.get("CDC_JOBS", str(os.cpu_count() or 1))
        prebuilt = os.environ.get("CDC_PYTHON_BUILD_DIR")
        if prebuilt:
            build = pathlib.Path(prebuilt).resolve()
            if not (build / "CMakeCache.txt").is_file():
                raise RuntimeError(f"CDC_PYTHON_BUILD_DIR={prebuilt} is not a configured build folder")
            step(f"building the module in the project's build folder {build}")
        else:
            work = pathlib.Path(self.build_temp).resolve()
            build = work / "module"
            prefixes = [p for p in (os.environ.get("CDC_PREFIX"),) if p]
            step("configuring the module against an installed cdc library")
            if not self.configure_module(build, prefixes):
                step("no installed cdc library: building the library first (its targets only)")
                prefixes.append(self.build_library(work, jobs))
                step("configuring the module against the library just built")
                if not self.configure_module(build, prefixes):
                    raise RuntimeError("cdc_chunkers: the module cannot be configured (see the CMake output above)")
        step(f"compiling the module ({jobs} jobs)")
        run(["cmake", "--build", build, "--target", "cdc_python", "-j", jobs], check=True)
        # The module of this interpreter's ABI (a build folder made for another
        # Python has another suffix: refused rather than installed broken).
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = build / "python" / "cdc_chunkers" / f"_core{suffix}"
        if not built.is_file():
            found = [p.name for p in (build / "python" / "cdc_chunkers").glob("_core*")]
            raise RuntimeError(f"no {built.name} in {built.parent} (found {found}): the build is for another Python "
                               f"than {sys.executable}")
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)
        step(f"module built: {target.name}")

    def configure_module(self, build, prefixes):
        """Configures bindings/python alone; False if no cdc library is found."""
        args = ["cmake", "-S", HERE, "-B", build, "-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={sys.executable}",
                *generator_args(), *shlex.split(os.environ.get("CDC_CMAKE_ARGS", ""))]
        if prefixes:
            args.append("-DCMAKE_PREFIX_PATH=" + ";".join(str(pathlib.Path(p).resolve()) for p in prefixes))
        if run(args).returncode == 0:
            return True
        if (build / "cdc-library-missing").exists():
            return False
        raise RuntimeError("cdc_chunkers: configuring the module failed (see the CMake output above)")

    def build_library(self, work, jobs):
        """The project's library alone (cdc, cdc::dupes), installed into work/prefix."""
        build, prefix = work / "library", work / "prefix"
        run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DCDC_BUILD_PYTHON=OFF",
             "-DCDC_BUILD_TOOLS=OFF", "-DCDC_BUILD_TESTS=OFF", "-DCDC_BUILD_SHARED=OFF", "-DCDC_BUILD_TRANSFER=OFF",
             "-DCDC_STATIC_TOOL=OFF", f"-DCMAKE_INSTALL_PREFIX={prefix}", *generator_args(),
             *shlex.split(os.environ.get("CDC_CMAKE_ARGS", ""))], check=True)
        step(f"compiling the library ({jobs} jobs)")
        run(["cmake", "--build", build, "-j", jobs], check=True)
        run(["cmake", "--install", build], check=True, stdout=subprocess.DEVNULL)
        return prefix


BASE = build_base()

setup(
    name="cdc_chunkers",
    version=project_version(),
    description="Content-defined chunking (FastCDC, keyed FastCDC, JC, UltraCDC, ...) at C++ speed",
    long_description=(HERE / "README.md").read_text(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    classifiers=["License :: OSI Approved :: Apache Software License"],
    python_requires=">=3.9",
    install_requires=["numpy"],
    packages=["cdc_chunkers", "cdc_chunkers.distributed"],
    package_data={"cdc_chunkers": ["__init__.pyi", "py.typed"]},
    ext_modules=[Extension("cdc_chunkers._core", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": BASE}, "egg_info": {"egg_base": BASE}},
    zip_safe=False,
)
