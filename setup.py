"""Builds the pairmd Python module with the project's CMake (the target pairmd_python) and puts
the .so into the wheel. pyproject.toml says how to install it; docs/python.md says more.

Environment: PAIRMD_CUDA=ON|OFF|AUTO (default AUTO: CUDA where nvcc is found),
PAIRMD_PIP_BUILD_DIR (default build-pip/ in the source tree, kept between installs),
PAIRMD_GSD_SOURCE (GSD's sdist; default: one an earlier build downloaded, else CMake fetches it),
CMAKE_BUILD_PARALLEL_LEVEL (default: the number of cores).
"""
import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


def gsd_sdist():
    """GSD's source distribution, as an earlier build downloaded it (so that pip works offline)."""
    if os.environ.get("PAIRMD_GSD_SOURCE"):
        return os.environ["PAIRMD_GSD_SOURCE"]
    found = glob.glob(os.path.join(SOURCE, "build*", "_deps", "gsd_sdist-subbuild", "*", "src", "gsd-*.tar.gz"))
    return found[0] if found else ""


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.environ.get("PAIRMD_PIP_BUILD_DIR", os.path.join(SOURCE, "build-pip"))
        args = [
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython_EXECUTABLE={sys.executable}",
            "-DPAIRMD_PYTHON=ON",
            "-DPAIRMD_BUILD_TESTS=OFF",
            f"-DPAIRMD_CUDA={os.environ.get('PAIRMD_CUDA', 'AUTO')}",
        ]
        if gsd_sdist():
            args.append(f"-DPAIRMD_GSD_SOURCE={gsd_sdist()}")
        subprocess.check_call(["cmake", "-S", SOURCE, "-B", build] + args)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
        subprocess.check_call(["cmake", "--build", build, "--target", "pairmd_python", "-j", jobs])
        built = glob.glob(os.path.join(build, "python", "pairmd*.so"))
        if not built:
            raise RuntimeError(f"the build left no pairmd*.so in {build}/python")
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built[0], dest)


setup(ext_modules=[CMakeExtension("pairmd")], cmdclass={"build_ext": CMakeBuild})
