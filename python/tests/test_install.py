"""`pip install --no-build-isolation ./python` works offline, and the installed package is whole:
the extension, the fsspec.specs entry point (fsspec finds "shoal" without `import shoal`)."""

import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_SRC = os.path.dirname(HERE)


def test_pip_install_and_entry_point(cluster, tmp_path):
    build_dir = os.environ.get("SHOAL_BUILD_DIR")
    if not build_dir:
        pytest.fail("SHOAL_BUILD_DIR is not set (CTest sets it to the build tree)")
    # A copy of python/, so pip's in-tree build leaves nothing in the source tree.
    src = tmp_path / "src"
    shutil.copytree(PYTHON_SRC, src, ignore=shutil.ignore_patterns("tests", "build", "*.egg-info", "__pycache__"))
    target = tmp_path / "site"
    env = dict(os.environ, SHOAL_BUILD_DIR=build_dir, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                        "--target", str(target), str(src)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    code = (
        "import sys, importlib.metadata as md\n"
        "eps = [e for e in md.entry_points(group='fsspec.specs') if e.name == 'shoal']\n"
        "assert eps and eps[0].value == 'shoal.fsspec:ShoalFileSystem', eps\n"
        "import fsspec\n"
        "fs = fsspec.filesystem('shoal', config=sys.argv[1])\n"  # no `import shoal` before this
        "sys.stdout.write(fs.cat_file('/data/notes/readme.txt')[:5].decode() + ' ')\n"
        "import shoal\n"
        "sys.stdout.write(shoal.__file__)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(target))
    r = subprocess.run([sys.executable, "-c", code, cluster.config], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    word, path = r.stdout.split(" ", 1)
    assert word == "hello"
    assert path.startswith(str(target))
    # PEP 561: typed, with the extension's stubs.
    assert (target / "shoal" / "py.typed").exists()
    assert (target / "shoal" / "_shoal.pyi").exists()
