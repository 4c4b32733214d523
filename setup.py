"""Builds libkselect_c.so with CMake and puts it inside the `kselect` package (see pyproject.toml).

Environment:
  KSELECT_CMAKE_ARGS   extra CMake arguments (e.g. "-DCUDAToolkit_ROOT=/usr/local/cuda-13.0
                       -DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
  KSELECT_BUILD_JOBS   parallel compile jobs (default: the CPU count)
The CMake build tree is build-python/cmake (git-ignored), so a second `pip install .` only
recompiles what changed.
"""

import os
import pathlib
import re
import shlex
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


def project_version() -> str:
    text = (ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
    match = re.search(r"project\(kselect VERSION ([0-9.]+)", text)
    if not match:
        raise RuntimeError("no `project(kselect VERSION x.y.z` in CMakeLists.txt")
    return match.group(1)


class CMakeLibrary(Extension):
    """A shared library CMake builds (not a Python extension: the module loads it with ctypes)."""

    def __init__(self, name: str, target: str):
        super().__init__(name, sources=[])
        self.target = target


class BuildWithCMake(build_ext):
    def build_extension(self, ext: CMakeLibrary) -> None:
        build_dir = ROOT / "build-python" / "cmake"
        build_dir.mkdir(parents=True, exist_ok=True)
        configure = [
            "cmake",
            "-S",
            str(ROOT),
            "-B",
            str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            "-DKSELECT_WITH_ARROW=OFF",
            "-DKSELECT_WITH_LIGHTGBM=OFF",
            "-DKSELECT_BUILD_TESTS=OFF",
            "-DKSELECT_BUILD_BENCHMARKS=OFF",
            "-DKSELECT_BUILD_CLI=OFF",
        ]
        if shutil.which("ninja") and not (build_dir / "CMakeCache.txt").exists():
            configure += ["-G", "Ninja"]
        configure += shlex.split(os.environ.get("KSELECT_CMAKE_ARGS", ""))
        jobs = os.environ.get("KSELECT_BUILD_JOBS", str(os.cpu_count() or 1))
        subprocess.run(configure, check=True)
        subprocess.run(
            ["cmake", "--build", str(build_dir), "--target", ext.target, "-j", jobs], check=True
        )
        built = build_dir / "lib" / "libkselect_c.so"
        # The module loads the file by path: the real file, under the unversioned name.
        destination = pathlib.Path(self.get_ext_fullpath(ext.name)).parent / "libkselect_c.so"
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built.resolve(), destination)

    def get_ext_filename(self, ext_name: str) -> str:
        # kselect.libkselect_c -> kselect/libkselect_c.so, no Python ABI tag.
        return os.path.join(*ext_name.split(".")) + ".so"


setup(
    version=project_version(),
    ext_modules=[CMakeLibrary("kselect.libkselect_c", target="kselect_c")],
    cmdclass={"build_ext": BuildWithCMake},
    options={"build": {"build_base": "build-python"}},
)
