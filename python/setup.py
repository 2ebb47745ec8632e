"""Builds the shoal package's extension, shoal._shoal, for `pip install ./python`.

Two ways, tried in order:
  1. the extension `make` already built in the build tree (SHOAL_BUILD_DIR, default
     ../build next to this directory), for this very interpreter: copied as is;
  2. compiled here from src/shoal_ext.cc against an installed Shoal (`make install`:
     pkg-config shoal, PKG_CONFIG_PATH for another prefix) and Debian's pybind11.
Metadata lives in pyproject.toml.
"""

import glob
import os
import shlex
import shutil
import subprocess
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


def built_extension():
    build_dir = os.environ.get("SHOAL_BUILD_DIR", os.path.join(HERE, "..", "build"))
    path = os.path.join(build_dir, "python", "shoal", "_shoal" + SUFFIX)
    return path if os.path.exists(path) else None


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "shoal"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return shlex.split(out)


class BuildShoalExt(build_ext):
    def build_extension(self, ext):
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        prebuilt = built_extension()
        if prebuilt:
            shutil.copyfile(prebuilt, target)
            return
        cflags, libs = pkg_config("--cflags"), pkg_config("--libs")
        if cflags is None or libs is None:
            raise RuntimeError(
                "cannot build shoal._shoal: no extension in the build tree (run `make` in the repository, "
                "or set SHOAL_BUILD_DIR) and no installed Shoal (run `make install`; PKG_CONFIG_PATH for "
                "another prefix)"
            )
        import pybind11

        ext.include_dirs += [pybind11.get_include()]
        ext.extra_compile_args += ["-std=c++2b", "-fvisibility=hidden"] + cflags
        ext.extra_link_args += libs
        super().build_extension(ext)


setup(
    ext_modules=[Extension("shoal._shoal", sources=glob.glob(os.path.join("src", "*.cc")), language="c++")],
    cmdclass={"build_ext": BuildShoalExt},
)
