"""ShoalFileSystem: Shoal as an fsspec filesystem, protocol "shoal".

    fs = fsspec.filesystem("shoal")                  # config from $SHOAL_CONFIG
    fs = fsspec.filesystem("shoal", config="/tmp/shoal-0/shoal.yaml")
    with fsspec.open("shoal:///data/train/x.jpg") as f: ...

Paths are namespace paths ("/data/train/x.jpg", with or without "shoal://").
Registered with fsspec when `shoal` is imported and through the package's
fsspec.specs entry point. Read-only for now: every write raises OSError(EROFS)
saying so, until the client writer is in the library.
"""

from __future__ import annotations

import datetime
import errno

from fsspec.spec import AbstractFileSystem

from .client import Client

_READ_ONLY = "shoal:// is read-only in this version of the Python SDK (writes come with the client writer)"


class ShoalFileSystem(AbstractFileSystem):
    protocol = "shoal"
    root_marker = "/"

    def __init__(self, config=None, client=None, **kwargs):
        """config: a Shoal config path (default $SHOAL_CONFIG); client: an existing shoal.Client."""
        super().__init__(config=config, **kwargs)
        self.client = client if client is not None else Client(config)

    @classmethod
    def _strip_protocol(cls, path):
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = super()._strip_protocol(path)
        if not path.startswith("/") and "://" not in path:
            path = "/" + path  # "shoal://data/x" names /data/x as well
        return path

    @staticmethod
    def _entry(st):
        if st.is_dir:
            return {"name": st.path.rstrip("/") or "/", "size": 0, "type": "directory"}
        return {
            "name": st.path,
            "size": st.size,
            "type": "file",
            "mtime": st.mtime_ns / 1e9,
            "version": st.version,
        }

    # -- metadata ------------------------------------------------------------------------

    def ls(self, path, detail=True, **kwargs):
        path = self._strip_protocol(path)
        if path == "/":
            entries = [{"name": m.path, "size": 0, "type": "directory"} for m in self.client.mounts()]
        else:
            entries = [self._entry(st) for st in self.client.ls(path)]
        entries.sort(key=lambda e: e["name"])
        return entries if detail else [e["name"] for e in entries]

    def info(self, path, **kwargs):
        path = self._strip_protocol(path)
        if path == "/":
            return {"name": "/", "size": 0, "type": "directory"}
        return self._entry(self.client.stat(path))

    def exists(self, path, **kwargs):
        try:
            self.info(path)
            return True
        except FileNotFoundError:
            return False

    def ukey(self, path):
        info = self.info(path)
        return info.get("version") or super().ukey(path)

    def modified(self, path):
        info = self.info(path)
        if "mtime" not in info:
            raise IsADirectoryError(errno.EISDIR, f"{path} is a directory: it has no modification time")
        return datetime.datetime.fromtimestamp(info["mtime"], tz=datetime.timezone.utc)

    # -- data ----------------------------------------------------------------------------

    def cat_file(self, path, start=None, end=None, **kwargs):
        path = self._strip_protocol(path)
        if start is None and end is None:
            return self.client.read(path)
        size = None
        if (start is not None and start < 0) or (end is not None and end < 0):
            size = self.info(path)["size"]
        start = 0 if start is None else (max(0, size + start) if start < 0 else start)
        if end is None:
            return self.client.read(path, start, -1)
        end = max(0, size + end) if end < 0 else end
        if end <= start:
            return b""
        return self.client.read(path, start, end - start)

    def _open(self, path, mode="rb", block_size=None, autocommit=True, cache_options=None, **kwargs):
        path = self._strip_protocol(path)
        if "r" not in mode or "+" in mode:
            raise OSError(errno.EROFS, f"open {path} in mode {mode!r}: {_READ_ONLY}")
        buffering = block_size if block_size and block_size > 0 else -1
        return self.client.open(path, "rb", buffering=buffering)

    # -- writes: refused for now ---------------------------------------------------------

    def _read_only(self, path, op):
        raise OSError(errno.EROFS, f"{op} {self._strip_protocol(path)}: {_READ_ONLY}")

    def mkdir(self, path, create_parents=True, **kwargs):
        self._read_only(path, "mkdir")

    def makedirs(self, path, exist_ok=False):
        self._read_only(path, "makedirs")

    def rmdir(self, path):
        self._read_only(path, "rmdir")

    def rm_file(self, path):
        self._read_only(path, "rm")

    def rm(self, path, recursive=False, maxdepth=None):
        self._read_only(path if isinstance(path, str) else path[0], "rm")

    def _rm(self, path):
        self._read_only(path, "rm")

    def mv(self, path1, path2, **kwargs):
        self._read_only(path1, "mv")

    def cp_file(self, path1, path2, **kwargs):
        self._read_only(path2, "cp")

    def pipe_file(self, path, value, **kwargs):
        self._read_only(path, "write")

    def put_file(self, lpath, rpath, **kwargs):
        self._read_only(rpath, "put")

    def touch(self, path, truncate=True, **kwargs):
        self._read_only(path, "touch")
