"""The package is typed (PEP 561) and describes itself: stubs that match the extension, docstrings
on the classes users meet, and a repr for the counters."""

import ast
import inspect
import os

import shoal
from shoal import _shoal

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(shoal.__file__)


def _stub_names():
    """{class name: {member names}} and the module-level functions of _shoal.pyi."""
    tree = ast.parse(open(os.path.join(PACKAGE, "_shoal.pyi")).read())
    classes, functions = {}, set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            classes[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        elif isinstance(node, ast.FunctionDef):
            functions.add(node.name)
    return classes, functions


def test_package_is_typed():
    assert os.path.exists(os.path.join(PACKAGE, "py.typed"))
    assert os.path.exists(os.path.join(PACKAGE, "_shoal.pyi"))


def test_extension_stubs_match_the_extension():
    classes, functions = _stub_names()
    public = {n for n in dir(_shoal) if not n.startswith("__")}
    ext_classes = {n for n in public if inspect.isclass(getattr(_shoal, n))}
    assert set(classes) == ext_classes
    assert functions == public - ext_classes
    for name, members in classes.items():
        cls = getattr(_shoal, name)
        have = {m for m in dir(cls) if not m.startswith("_")} | ({"__init__"} if "__init__" in members else set())
        assert members == have, name


def test_parameter_names_in_stubs_match_the_extension():
    # pybind11 puts each overload's signature first in its docstring: "name(self, a: T, b: U = ...) -> R".
    tree = ast.parse(open(os.path.join(PACKAGE, "_shoal.pyi")).read())
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        for fn in node.body:
            if not isinstance(fn, ast.FunctionDef) or fn.decorator_list or fn.name == "__init__":
                continue
            doc = getattr(getattr(_shoal, node.name), fn.name).__doc__
            signature = doc.split("\n", 1)[0]
            names = [a.split(":")[0].strip() for a in signature[signature.index("(") + 1:signature.rindex(")")].split(",")
                     if a.strip()]
            assert names == [a.arg for a in fn.args.args], f"{node.name}.{fn.name}: {signature}"


def test_docstrings_on_what_users_meet():
    from shoal.fsspec import ShoalFileSystem

    for cls in (ShoalFileSystem, shoal.Client, shoal.FileStatus, shoal.WorkerStatus, shoal.MountInfo,
                _shoal.ClientStats):
        assert cls.__doc__ and len(cls.__doc__.strip()) > 40, cls
    for field in ("size", "version", "mtime_ns", "mode"):
        assert getattr(shoal.FileStatus, field).__doc__, field


def test_client_stats_repr_names_every_counter(cluster, client):
    client.read(cluster.path("notes/readme.txt"))
    stats = client.stats()
    text = repr(stats)
    counters = [n for n in dir(stats) if not n.startswith("_")]
    assert text.startswith("ClientStats(") and text.endswith(")")
    assert len(counters) >= 13
    for n in counters:
        assert f"{n}={getattr(stats, n)}" in text
    assert stats.worker_read_bytes > 0
