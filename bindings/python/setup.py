"""pip install for cdc_chunkers: the extension is built by the project's
CMake (the whole source tree two levels up), as scripts/build.sh does, but
with only the targets the package needs.

    python3 -m venv --system-site-packages .venv    # Debian's numpy
    .venv/bin/pip install --no-build-isolation ./bindings/python

--no-build-isolation lets pip use the setuptools, wheel and pybind11 already
installed (Debian: python3-setuptools python3-wheel python3-pybind11), so
nothing is downloaded. CDC_CMAKE_ARGS adds CMake arguments.
CDC_PYTHON_BUILD_DIR names a build folder of the project already configured
(scripts/build.sh release: build/): the module is built there (nothing to do
if it is up to date) instead of configuring a new one.
"""
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(cdc VERSION ([0-9.]+)", text).group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        prebuilt = os.environ.get("CDC_PYTHON_BUILD_DIR")
        build = pathlib.Path(prebuilt).resolve() if prebuilt else pathlib.Path(self.build_temp).resolve() / "cmake"
        if prebuilt:
            if not (build / "CMakeCache.txt").is_file():
                raise RuntimeError(f"CDC_PYTHON_BUILD_DIR={prebuilt} is not a configured build folder")
        else:
            self.configure(build)
        jobs = os.environ.get("CDC_JOBS", str(os.cpu_count() or 1))
        subprocess.run(["cmake", "--build", str(build), "--target", "cdc_python", "-j", jobs], check=True)
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

    def configure(self, build):
        args = [
            "-DCMAKE_BUILD_TYPE=Release",
            "-DCDC_BUILD_PYTHON=ON",
            "-DCDC_BUILD_TOOLS=OFF",
            "-DCDC_BUILD_TESTS=OFF",
            "-DCDC_BUILD_SHARED=OFF",
            f"-DPython_EXECUTABLE={sys.executable}",
        ]
        if shutil.which("ninja"):
            args.append("-GNinja")
        if shutil.which("ccache"):
            args += ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
        args += shlex.split(os.environ.get("CDC_CMAKE_ARGS", ""))
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), *args], check=True)


setup(
    name="cdc_chunkers",
    version=project_version(),
    description="Content-defined chunking (FastCDC, keyed FastCDC, JC, UltraCDC, ...) at C++ speed",
    long_description=(HERE / "README.md").read_text(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    classifiers=["License :: OSI Approved :: Apache Software License"],
    python_requires=">=3.8",
    install_requires=["numpy"],
    packages=["cdc_chunkers"],
    package_data={"cdc_chunkers": ["__init__.pyi", "py.typed"]},
    ext_modules=[Extension("cdc_chunkers._core", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
