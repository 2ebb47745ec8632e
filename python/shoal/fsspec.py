"""ShoalFileSystem: Shoal as an fsspec filesystem, protocol "shoal".

    fs = fsspec.filesystem("shoal")                  # config from $SHOAL_CONFIG
    fs = fsspec.filesystem("shoal", config="/tmp/shoal-0/shoal.yaml")
    with fsspec.open("shoal:///data/train/x.jpg") as f: ...

Paths are namespace paths ("/data/train/x.jpg", with or without "shoal://").
fsspec finds the protocol through the package's fsspec.specs entry point, in an
installed package (pyproject.toml) and in the build tree alike (CMake writes a
shoal-VERSION.dist-info next to the package there), so `import shoal` is not
needed first; importing shoal registers it too. Writes (open "wb", pipe, put,
cp, touch, mkdir, rm, mv) go through the client writer, write-through to the
under-store; a mount configured read_only refuses them with PermissionError.

A filesystem pickles (and serialises with to_json) with the absolute path of the
config it was opened with, never with config=None: unpickled in another process
(a Dask or Ray worker, a DataLoader worker started by spawn) it talks to the same
cluster, whatever SHOAL_CONFIG says there.
"""

from __future__ import annotations

import datetime
import errno
import os
import shutil

from fsspec.spec import AbstractFileSystem

from .client import WRITE_BUFFER, Client


class ShoalFileSystem(AbstractFileSystem):
    """A Shoal cluster as an fsspec filesystem (protocol "shoal").

    Reads go through the cluster's cache (``open`` gives a buffered, seekable
    shoal.ShoalFile; ``cat_file`` reads a whole file or a range in one call); ``ls``
    of "/" lists the mounts. Errors are the standard exceptions (FileNotFoundError,
    PermissionError, ...), as in shoal.Client. Safe to share between threads and
    across fork (the client opens a fresh connection set in a child).
    """

    protocol = "shoal"
    root_marker = "/"

    def __init__(self, config=None, client=None, **kwargs):
        """config: a Shoal config path (default $SHOAL_CONFIG); client: an existing shoal.Client
        (its config is the one pickled)."""
        super().__init__(config=config, **kwargs)
        self.client = client if client is not None else Client(config)

    # fsspec keeps the arguments an instance was made with as storage_options (set after
    # __init__), and pickles and serialises it from them. Stored here with the client's absolute
    # config path in place of config=None or a client object, so that a copy in another process
    # reaches this cluster.
    @property
    def storage_options(self):
        return self._storage_options

    @storage_options.setter
    def storage_options(self, options):
        options = dict(options)
        options.pop("client", None)
        options["config"] = self.client.config
        self._storage_options = options

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
        """Entries of a directory, sorted by name (dicts with name, size, type, and mtime and version for
        files; names only with detail=False). "/" lists the mounts; a file lists as itself."""
        path = self._strip_protocol(path)
        if path == "/":
            entries = [{"name": m.path, "size": 0, "type": "directory"} for m in self.client.mounts()]
        else:
            entries = [self._entry(st) for st in self.client.ls(path)]
        entries.sort(key=lambda e: e["name"])
        return entries if detail else [e["name"] for e in entries]

    def info(self, path, **kwargs):
        """{name, size, type} of a file or directory, with mtime (seconds) and version for a file;
        FileNotFoundError when there is none."""
        path = self._strip_protocol(path)
        if path == "/":
            return {"name": "/", "size": 0, "type": "directory"}
        return self._entry(self.client.stat(path))

    def exists(self, path, **kwargs):
        """Whether a file or directory is at `path` (other errors, such as PermissionError, raise)."""
        try:
            self.info(path)
            return True
        except FileNotFoundError:
            return False

    def ukey(self, path):
        """The file's version (ETag, or mtime-size): it changes whenever the content does."""
        info = self.info(path)
        return info.get("version") or super().ukey(path)

    def modified(self, path):
        """The file's modification time (UTC datetime); IsADirectoryError for a directory."""
        info = self.info(path)
        if "mtime" not in info:
            raise IsADirectoryError(errno.EISDIR, f"{path} is a directory: it has no modification time")
        return datetime.datetime.fromtimestamp(info["mtime"], tz=datetime.timezone.utc)

    # -- data ----------------------------------------------------------------------------

    def cat_file(self, path, start=None, end=None, **kwargs):
        """Bytes [start, end) of a file (negative values count from its end), in one call without
        the GIL; the whole file by default."""
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
        if mode.replace("t", "") not in ("rb", "wb", "xb"):
            raise ValueError(f"open {path}: mode {mode!r} is not supported ('rb', 'wb' or 'xb')")
        if not autocommit:
            raise NotImplementedError(f"open {path}: shoal:// has no transactions (autocommit=False)")
        buffering = block_size if block_size and block_size > 0 else -1
        return self.client.open(path, mode.replace("t", ""), buffering=buffering)

    # -- writes: through the client writer to the under-store ----------------------------

    def pipe_file(self, path, value, **kwargs):
        """Writes `value` as the whole file (visible once written)."""
        with self.client.create(self._strip_protocol(path)) as f:
            f.write(value)

    def put_file(self, lpath, rpath, callback=None, **kwargs):
        """Uploads a local file (a directory: made) to `rpath`."""
        rpath = self._strip_protocol(rpath)
        if os.path.isdir(lpath):
            self.makedirs(rpath, exist_ok=True)
            return
        with open(lpath, "rb") as src, self.client.create(rpath) as dst:
            shutil.copyfileobj(src, dst, WRITE_BUFFER)

    def cp_file(self, path1, path2, **kwargs):
        """Copies a file within Shoal (through this client: read, then written through)."""
        path1, path2 = self._strip_protocol(path1), self._strip_protocol(path2)
        if self.isdir(path1):
            self.makedirs(path2, exist_ok=True)
            return
        with self.client.open(path1) as src, self.client.create(path2) as dst:
            shutil.copyfileobj(src, dst, WRITE_BUFFER)

    def touch(self, path, truncate=True, **kwargs):
        """Makes an empty file (replacing one, with truncate=True)."""
        path = self._strip_protocol(path)
        if truncate or not self.exists(path):
            self.client.create(path).close()

    def mkdir(self, path, create_parents=True, **kwargs):
        """Creates a directory (and its parents with create_parents); FileExistsError when it exists."""
        path = self._strip_protocol(path)
        if not create_parents:
            parent = self._parent(path)
            if parent != "/" and not self.isdir(parent):
                raise FileNotFoundError(errno.ENOENT, f"mkdir {path}: no parent directory {parent}")
        self.client.mkdir(path)

    def makedirs(self, path, exist_ok=False):
        """Creates a directory and its parents; an existing directory is fine with exist_ok."""
        try:
            self.client.mkdir(self._strip_protocol(path))
        except FileExistsError:
            if not exist_ok or not self.isdir(path):
                raise

    def rmdir(self, path):
        """Removes an empty directory."""
        self.client.rmdir(self._strip_protocol(path))

    def rm_file(self, path):
        """Removes a file (or an empty directory)."""
        path = self._strip_protocol(path)
        if self.isdir(path):
            self.client.rmdir(path)
        else:
            self.client.delete(path)

    def _rm(self, path):
        self.rm_file(path)

    def rm(self, path, recursive=False, maxdepth=None):
        """Removes files, and directories with recursive=True (deepest first)."""
        paths = self.expand_path(path, recursive=recursive, maxdepth=maxdepth)
        dirs = {p for p in paths if self.isdir(p)}
        # Deepest first, so that each directory is empty when its turn comes.
        for p in sorted(paths, key=lambda p: (p.count("/"), p), reverse=True):
            if p not in dirs:
                self.client.delete(p)
                continue
            try:
                self.client.rmdir(p)
            except FileNotFoundError:
                pass  # an object store's implied directory: gone with its last entry

    def mv(self, path1, path2, recursive=False, maxdepth=None, **kwargs):
        """Renames within one mount (see shoal.Client.rename for what each store supports)."""
        if isinstance(path1, str) and isinstance(path2, str):
            self.client.rename(self._strip_protocol(path1), self._strip_protocol(path2))
        else:
            super().mv(path1, path2, recursive=recursive, maxdepth=maxdepth, **kwargs)
