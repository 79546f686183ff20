"""Why: `pip install --no-build-isolation ./python` (or `make python`) from
the repository must give a working `import fmlp` with no network: this
builds the C library as libfmlp.so with CMake (or takes a built one from
FMLP_LIBRARY) and installs it inside the package, which is pure Python over
ctypes. Environment:
  FMLP_LIBRARY     a built libfmlp.so to install instead of building one
                   (a relative path may be from the repository root)
  FMLP_BUILD_DIR   CMake build directory (default: <repo>/build-python)
  FMLP_CMAKE_ARGS  extra configure arguments, e.g. "-DFMLP_CUDA=OFF" or
                   "-DFMLP_CUDA_GENCODE=-gencode=arch=compute_90a,code=sm_90a"
"""
import os
import shlex
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def build_library():
    if not os.path.exists(os.path.join(ROOT, "CMakeLists.txt")):
        raise SystemExit("fmlp: %s is not the fmlp repository (no CMakeLists.txt); install from the repository's "
                         "python/ folder, or set FMLP_LIBRARY to a built libfmlp.so" % ROOT)
    build = os.environ.get("FMLP_BUILD_DIR") or os.path.join(ROOT, "build-python")
    configure = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release"]
    configure += shlex.split(os.environ.get("FMLP_CMAKE_ARGS", ""))
    subprocess.check_call(configure)
    subprocess.check_call(["cmake", "--build", build, "--target", "fmlp_shared", "-j", str(os.cpu_count() or 2)])
    return os.path.join(build, "libfmlp.so")


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        lib = os.environ.get("FMLP_LIBRARY") or build_library()
        # pip runs this from python/; a relative FMLP_LIBRARY may name a path from the repository root
        if not os.path.isabs(lib) and not os.path.exists(lib):
            lib = os.path.join(ROOT, lib)
        if not os.path.exists(lib):
            raise SystemExit("fmlp: %s does not exist; build it (cmake --build BUILD --target fmlp_shared)" % lib)
        self.copy_file(lib, os.path.join(self.build_lib, "fmlp", "libfmlp.so"))


class PlatformDistribution(Distribution):
    """The package carries a native library: the wheel is per platform."""

    def has_ext_modules(self):
        return True


setup(
    name="fmlp",
    version="0.1.0",
    description="fmlp's fused MLP forwards and profiler for PyTorch users",
    packages=["fmlp"],
    python_requires=">=3.8",
    cmdclass={"build_py": BuildPyWithLibrary},
    distclass=PlatformDistribution,
    zip_safe=False,
)
