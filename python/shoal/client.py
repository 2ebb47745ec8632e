"""shoal.Client and the file objects it opens.

A thin layer over the C++ client library (the ``shoal._shoal`` extension): routing,
caching, failover and deadlines all happen there. This module adds what Python
expects: standard buffered file objects, directory walks and globs, fork safety
and pickling.

Fork safety: the C++ client runs threads and holds connections, and neither
survives ``fork()``. Every call checks the pid; in a child (a PyTorch DataLoader
worker, a multiprocessing pool) the first call opens a fresh C++ client from the
same config. The parent's C++ client is never destroyed in the child (its threads
do not exist there): the extension leaks it on purpose.

Pickling: a Client pickles as its config path, a file as (client, path, position).
"""

from __future__ import annotations

import fnmatch
import io
import os
import posixpath
import warnings

from . import _shoal

FileStatus = _shoal.FileStatus
WorkerStatus = _shoal.WorkerStatus
MountInfo = _shoal.MountInfo
ClientStats = _shoal.ClientStats
WRITE_BUFFER = 8 << 20  # a ShoalWriter's buffer: small writes are gathered into parts this size
# A ShoalFile's default buffer. Record formats (a torch.save zip, tar, parquet) are read as a seek,
# a small header read that fills the buffer, then the record's bytes, which io.BufferedReader
# takes from the buffer and reads the rest of straight into the caller's memory. 64 KiB holds a
# header and its padding in one request; a larger buffer copies each record's first bytes through
# it (torch.load of a 500 MB checkpoint ran at 0.38x a local file with 4 MiB, docs/benchmarks.md),
# and io's default of 8 KiB measured no better than 64 KiB anywhere and worse in some runs.
READ_BUFFER = 64 << 10


# Bumped in a child after each fork. Clients and files compare it with the one they were
# opened under, instead of calling os.getpid() on every read: on a virtual machine that
# system call costs microseconds, paid with the GIL held.
_fork_generation = 0


def _after_fork_in_child():
    global _fork_generation
    _fork_generation += 1


os.register_at_fork(after_in_child=_after_fork_in_child)


def _config_path(config):
    if config is None:
        config = os.environ.get("SHOAL_CONFIG", "")
        if not config:
            raise ValueError(
                "no Shoal config: pass shoal.Client(config=PATH) or set SHOAL_CONFIG "
                "(`shoal up` prints the path it wrote)"
            )
    return os.path.abspath(os.fspath(config))


class Client:
    """A client of a Shoal cluster, from a config file (default ``$SHOAL_CONFIG``).

    Safe to share between threads. Paths are namespace paths (``/data/train/x.jpg``)
    or the physical URIs inside a mount (``s3://bucket/prefix/train/x.jpg``).
    """

    def __init__(self, config=None, token=None):
        """``token``: a bearer token (``shoal token issue``) to send instead of
        ``$SHOAL_TOKEN`` or the config's ``client.token_file``."""
        self.config = _config_path(config)
        self._token = token or ""
        self._generation = _fork_generation
        self._native = _shoal.Client(self.config, self._token)

    # -- fork safety and pickling --------------------------------------------------------

    def _client(self):
        """The C++ client of this process: a fresh one after a fork."""
        if self._generation != _fork_generation:
            # The old native client is released here and leaked by the extension (see the
            # module docstring): never destroyed in the child. No lock: one inherited from
            # the parent could be held forever; two threads racing here make two clients
            # of this process, and the one dropped is destroyed normally.
            generation = _fork_generation
            self._native = _shoal.Client(self.config, self._token)
            self._generation = generation
        return self._native

    def __reduce__(self):
        # A DataLoader worker process gets the token too: it reads as the same user.
        return (Client, (self.config, self._token or None))

    def __repr__(self):
        return f"shoal.Client(config={self.config!r})"

    # -- metadata ------------------------------------------------------------------------

    def stat(self, path) -> FileStatus:
        """Status of a file or directory; FileNotFoundError when there is none."""
        return self._client().stat(os.fspath(path))

    def ls(self, path) -> list:
        """Entries of a directory (FileStatus, sorted by path); a file lists as itself."""
        return self._client().ls(os.fspath(path))

    def exists(self, path) -> bool:
        try:
            self.stat(path)
            return True
        except FileNotFoundError:
            return False

    def walk(self, top):
        """Like os.walk, top-down: yields (dirpath, dirnames, filenames)."""
        top = os.fspath(top).rstrip("/") or "/"
        pending = [top]
        while pending:
            d = pending.pop()
            dirs, files = [], []
            for e in self.ls(d):
                name = posixpath.basename(e.path.rstrip("/"))
                if e.path.rstrip("/") == d:
                    continue  # a file lists as itself
                (dirs if e.is_dir else files).append(name)
            yield d, dirs, files
            pending.extend(reversed([posixpath.join(d, n) for n in dirs]))

    def find(self, path) -> list:
        """Every file under `path` (or `path` itself when it is a file), as FileStatus, sorted."""
        st = self.stat(path)
        if not st.is_dir:
            return [st]
        out = []
        pending = [os.fspath(path).rstrip("/") or "/"]
        while pending:
            for e in self.ls(pending.pop()):
                if e.is_dir:
                    pending.append(e.path.rstrip("/"))
                else:
                    out.append(e)
        out.sort(key=lambda e: e.path)
        return out

    def glob(self, pattern) -> list:
        """Paths matching a glob (``*`` and ``?`` within one name, ``**`` across names), sorted."""
        pattern = os.fspath(pattern)
        if not any(c in pattern for c in "*?["):
            return [pattern] if self.exists(pattern) else []
        parts = pattern.split("/")
        fixed = []
        for p in parts:
            if any(c in p for c in "*?["):
                break
            fixed.append(p)
        root = "/".join(fixed) or "/"
        if "**" in pattern:
            names = [e.path for e in self.find(root)] if self.exists(root) else []
            dirs = set()
            for n in names:  # directories can match too
                d = posixpath.dirname(n)
                while d.startswith(root) and d not in dirs:
                    dirs.add(d)
                    d = posixpath.dirname(d)
            candidates = names + sorted(dirs)
            rx = _glob_regex(pattern)
            return sorted(p for p in candidates if rx.fullmatch(p))
        depth = len(parts)
        level = [root]
        for i in range(len(fixed), depth):
            nxt = []
            for d in level:
                try:
                    entries = self.ls(d)
                except (FileNotFoundError, NotADirectoryError):
                    continue
                for e in entries:
                    name = posixpath.basename(e.path.rstrip("/"))
                    if e.path.rstrip("/") == d.rstrip("/"):
                        continue
                    if fnmatch.fnmatchcase(name, parts[i]) and (i == depth - 1 or e.is_dir):
                        nxt.append(e.path.rstrip("/"))
            level = nxt
        return sorted(level)

    # -- data ----------------------------------------------------------------------------

    def read(self, path, offset=0, length=-1) -> bytes:
        """Bytes [offset, offset+length) of a file (to its end with length -1)."""
        if offset < 0:
            raise ValueError(f"read {path}: negative offset {offset}")
        return self._client().read(os.fspath(path), offset, length)

    def readinto(self, path, buffer, offset=0) -> int:
        """Reads a file from `offset` into a writable buffer (bytearray, memoryview, numpy
        array); returns the count, less than the buffer only at the end of the file. One
        call without the GIL, open included: the fastest way to many small files."""
        if offset < 0:
            raise ValueError(f"readinto {path}: negative offset {offset}")
        return self._client().readinto(os.fspath(path), buffer, offset)

    def read_many(self, paths) -> list:
        """read(path) of each path (whole files), in order: a list of bytes.

        The files are read one after another, with the GIL released once per ~1 MiB of
        files rather than twice per file, so that Python threads reading many small files do
        not queue for the GIL (use several threads for parallel reads). At least as fast as a
        loop of read() at any batch size. On glibc the first call raises malloc's trim
        threshold to twice the largest batch (64-256 MiB), so that a batch's memory is reused
        by the next rather than given back to the kernel and faulted in again (a choice made
        with MALLOC_TRIM_THRESHOLD_ / MALLOC_MMAP_THRESHOLD_ / GLIBC_TUNABLES is kept).
        Raises the error of the first file that fails (FileNotFoundError, ...), naming it.
        """
        if isinstance(paths, (str, bytes, os.PathLike)):
            raise TypeError(f"read_many takes a list of paths, not one path ({paths!r}): use read()")
        return self._client().read_many([os.fspath(p) for p in paths])

    def readinto_many(self, items) -> list:
        """readinto(path, buffer, offset) of each (path, buffer) or (path, buffer, offset) of
        `items`, in order, with ONE release of the GIL for them all; returns the counts.

        Stops at the first file that fails and raises its error (the buffers before it are
        filled). Buffers must be writable and C-contiguous (bytearray, memoryview, numpy).
        """
        batch = []
        for i, item in enumerate(items):
            if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
                raise TypeError(f"readinto_many: item {i} is not a (path, buffer) or (path, buffer, offset) tuple")
            if len(item) == 3 and item[2] < 0:
                raise ValueError(f"readinto_many {item[0]}: negative offset {item[2]}")
            batch.append((os.fspath(item[0]), *item[1:]))
        return self._client().readinto_many(batch)

    def open(self, path, mode="rb", buffering=-1):
        """A binary file.

        "rb": a ShoalFile (io.BufferedReader over a seekable ShoalRawFile) with a buffer of
        `buffering` bytes (default READ_BUFFER, 64 KiB; at least io.DEFAULT_BUFFER_SIZE);
        buffering=0 returns the raw file itself. "wb" (replace) or "xb" (FileExistsError when the
        path exists): a ShoalWriter, visible under the path once closed; leaving a `with`
        block by an exception, or dropping it unclosed, aborts it.
        """
        if mode in ("wb", "w", "xb", "x"):
            size = WRITE_BUFFER if buffering in (-1, 1) else buffering
            return self.create(path, overwrite=not mode.startswith("x"), buffer_size=size)
        if mode not in ("rb", "r"):
            raise ValueError(f"open {path}: mode {mode!r} is not supported (binary only: 'rb', 'wb' or 'xb')")
        raw = ShoalRawFile(self, os.fspath(path))
        if buffering == 0:
            return raw
        size = READ_BUFFER if buffering in (-1, 1) else buffering
        return ShoalFile(raw, max(size, io.DEFAULT_BUFFER_SIZE))

    # -- writes: through to the under-store, then seen by every client ----------------------

    def create(self, path, overwrite=True, buffer_size=None):
        """A new file written sequentially (ShoalWriter); nothing is visible until close()."""
        path = os.fspath(path)
        size = WRITE_BUFFER if buffer_size is None else buffer_size
        return ShoalWriter(self._client().create(path, overwrite), path, size)

    def delete(self, path):
        """Removes a file (FileNotFoundError when absent, IsADirectoryError for a directory)."""
        self._client().delete(os.fspath(path))

    def mkdir(self, path):
        """Creates a directory and its missing parents (FileExistsError when it exists)."""
        self._client().mkdir(os.fspath(path))

    def rmdir(self, path):
        """Removes an empty directory (OSError ENOTEMPTY when it has entries)."""
        self._client().rmdir(os.fspath(path))

    def rename(self, from_path, to_path):
        """Renames a file within one mount, replacing the target (see client.h for each store)."""
        self._client().rename(os.fspath(from_path), os.fspath(to_path))

    def warm(self, path) -> int:
        """Reads a file through the cluster and drops the bytes: its owners cache it."""
        return self._client().warm(os.fspath(path))

    def prefetch(self, paths_in_order, window_files=512, window_bytes=256 << 20, threads=64):
        """Fetches files into the cluster ahead of a reader that reads them in this order.

        Returns a started shoal.prefetch.Prefetcher; call its advance(i) as item i is
        consumed, and close() when done (or use it as a context manager). Its stats()
        tell how often the reader got to a file first and how far ahead it ran.
        """
        from .prefetch import Prefetcher

        return Prefetcher(self, paths_in_order, window_files=window_files, window_bytes=window_bytes,
                          threads=threads).start()

    def refresh(self, path, recursive=False, data=False):
        """Drops cached metadata (and pages, with data=True) under path on every worker."""
        self._client().refresh(os.fspath(path), recursive, data)

    # -- cluster -------------------------------------------------------------------------

    def status(self) -> list:
        """One WorkerStatus per worker of the config."""
        return self._client().status()

    def whoami(self) -> dict:
        """Who the workers take this client to be: ``{"user", "groups", "proof", "via",
        "may_act_for_others"}`` (``user`` is "" when anonymous)."""
        return self._client().whoami()

    def mounts(self) -> list:
        """The mount table (MountInfo)."""
        return self._client().mounts()

    def stats(self) -> ClientStats:
        """Counters of this process's client (bytes from workers, from the store, ...)."""
        return self._client().stats()


def _glob_regex(pattern):
    import re

    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


class ShoalRawFile(io.RawIOBase):
    """A seekable raw reader of one file version; wrap it in io.BufferedReader.

    readinto() copies straight into the caller's buffer without the GIL. After a
    fork the file is opened again through the child's client, at the same version.
    """

    def __init__(self, client: Client, path: str, position: int = 0):
        super().__init__()
        self._shoal_client = client
        self.name = path
        self._pos = position
        self._generation = _fork_generation
        self._file = client._client().open(path)
        self._status = self._file.status

    @property
    def status(self) -> FileStatus:
        return self._status

    @property
    def size(self) -> int:
        return self._status.size

    def _native(self):
        if self._generation != _fork_generation:
            generation = _fork_generation
            f = self._shoal_client._client().open(self.name)
            if f.status.version != self._status.version:
                f.close()
                raise OSError(
                    116,  # ESTALE
                    f"{self.name} changed since it was opened (version {self._status.version} -> "
                    f"{f.status.version}); open it again",
                )
            self._file, self._generation = f, generation
        return self._file

    def readable(self):
        return True

    def seekable(self):
        return True

    def readinto(self, buffer):
        self._checkClosed()
        n = self._native().readinto(buffer, self._pos)
        self._pos += n
        return n

    def readall(self):
        self._checkClosed()
        data = self._native().read(self._pos, -1)
        self._pos += len(data)
        return data

    def read(self, size=-1):
        self._checkClosed()
        if size is None or size < 0:
            return self.readall()
        data = self._native().read(self._pos, size)
        self._pos += len(data)
        return data

    def seek(self, offset, whence=io.SEEK_SET):
        self._checkClosed()
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._status.size + offset
        else:
            raise ValueError(f"seek {self.name}: invalid whence {whence}")
        if pos < 0:
            raise OSError(22, f"seek {self.name}: negative position {pos}")
        self._pos = pos
        return pos

    def tell(self):
        self._checkClosed()
        return self._pos

    def close(self):
        if not self.closed and self._generation == _fork_generation:
            self._file.close()
        super().close()

    def __reduce__(self):
        return (_reopen, (self._shoal_client, self.name, self._pos, self._status.version))


class ShoalFile(io.BufferedIOBase):
    """The buffered file client.open() returns: an io.BufferedReader over a ShoalRawFile.

    It delegates every call to that io.BufferedReader (``.buffered``) rather than
    being one, because numpy < 1.25 takes any io.BufferedReader for an OS file and
    calls fileno() on it, so numpy.load() would fail on a real BufferedReader.
    """

    def __init__(self, raw, buffer_size=READ_BUFFER):
        super().__init__()
        self.buffered = io.BufferedReader(raw, buffer_size=buffer_size)

    @property
    def raw(self):
        return self.buffered.raw

    @property
    def name(self):
        return self.buffered.raw.name

    @property
    def mode(self):
        return "rb"

    @property
    def closed(self):
        return self.buffered.closed

    @property
    def size(self):
        return self.buffered.raw.size

    def readable(self):
        return self.buffered.readable()

    def seekable(self):
        return self.buffered.seekable()

    def read(self, size=-1):
        return self.buffered.read(size)

    def read1(self, size=-1):
        return self.buffered.read1(size)

    def readinto(self, buffer):
        return self.buffered.readinto(buffer)

    def readinto1(self, buffer):
        return self.buffered.readinto1(buffer)

    def peek(self, size=0):
        return self.buffered.peek(size)

    def readline(self, size=-1):
        return self.buffered.readline(size)

    def seek(self, offset, whence=io.SEEK_SET):
        return self.buffered.seek(offset, whence)

    def tell(self):
        return self.buffered.tell()

    def close(self):
        self.buffered.close()

    def __reduce__(self):
        return (_reopen_buffered, (self.raw.__reduce__()[1], self.tell()))

    def __repr__(self):
        return f"<shoal.ShoalFile name={self.name!r}>"


class ShoalWriter(io.BufferedIOBase):
    """A new file being written: sequential, buffered; close() commits it (the durability
    point) and sets `status` to its new FileStatus.

    abort(), an exception leaving a `with` block, or the object dropped unclosed discard
    it: nothing becomes visible. Not for use from several threads at once. Writes of at
    least the buffer size go to the C++ writer directly, without the GIL.
    """

    def __init__(self, native, path, buffer_size=None):
        super().__init__()
        self._native = native
        self._pid = os.getpid()
        self.name = path
        self.status = None
        self._buffer_size = max(1, buffer_size or WRITE_BUFFER)
        self._buf = bytearray()

    @property
    def mode(self):
        return "wb"

    def writable(self):
        return True

    def write(self, data):
        self._checkClosed()
        self._check_pid()
        view = memoryview(data)
        if view.format != "B" or view.ndim != 1:
            view = view.cast("B")  # bytes of any C-contiguous buffer (TypeError when not contiguous)
        n = view.nbytes
        if len(self._buf) + n < self._buffer_size:
            self._buf += view
            return n
        self._flush_buffer()
        if n >= self._buffer_size:
            self._native.write(view)
        else:
            self._buf += view
        return n

    def _flush_buffer(self):
        if self._buf:
            self._native.write(self._buf)
            self._buf = bytearray()

    def flush(self):
        # Bytes reach the store in parts and become visible only at close(): a flush
        # before then has nothing to promise, so it only hands the buffer on.
        if not self.closed and self._pid == os.getpid():
            self._flush_buffer()

    def tell(self):
        self._checkClosed()
        return self._native.size + len(self._buf)

    def close(self):
        """Commits the file; returns its FileStatus (None if already closed)."""
        if self.closed:
            return self.status
        try:
            self._check_pid()
            self._flush_buffer()
            self.status = self._native.close()
        except BaseException:
            self._native.abort()
            raise
        finally:
            super().close()
        return self.status

    def abort(self):
        """Discards what was written."""
        if not self.closed:
            self._buf = bytearray()
            self._native.abort()
            super().close()

    def _check_pid(self):
        if self._pid != os.getpid():
            raise OSError(f"{self.name}: a ShoalWriter cannot be used in a process forked after it was opened")

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.abort()
        else:
            self.close()

    def __del__(self):
        if not self.closed:
            warnings.warn(f"ShoalWriter {self.name!r} dropped without close(): aborted, nothing written",
                          ResourceWarning, stacklevel=2)
            self.abort()

    def __repr__(self):
        return f"<shoal.ShoalWriter name={self.name!r}>"


def _reopen_buffered(raw_args, position):
    f = ShoalFile(_reopen(*raw_args))
    f.seek(position)
    return f


def _reopen(client, path, position, version):
    raw = ShoalRawFile(client, path, position)
    if raw.status.version != version:
        raw.close()
        raise OSError(116, f"{path} changed since it was pickled (version {version} -> {raw.status.version})")
    return raw
