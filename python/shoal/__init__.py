"""Shoal: a distributed read-through cache for AI training data, from Python.

    import shoal
    client = shoal.Client()                      # the config in $SHOAL_CONFIG
    with client.open("/data/train/0001.jpg") as f:
        header = f.read(16)

    import fsspec                                # fsspec finds the "shoal" protocol by entry point
    fsspec.open("shoal:///data/train/0001.jpg").open().read()

    from shoal.torch import ShoalMapDataset     # PyTorch datasets (needs torch)

Errors are the standard exceptions: FileNotFoundError, PermissionError,
TimeoutError, ConnectionError, IsADirectoryError, NotADirectoryError,
FileExistsError, or OSError with Shoal's message (its code name in `.shoal_code`).
"""

from .client import Client, ClientStats, FileStatus, MountInfo, ShoalFile, ShoalRawFile, ShoalWriter, WorkerStatus

__all__ = ["Client", "ClientStats", "FileStatus", "MountInfo", "ShoalFile", "ShoalRawFile", "ShoalWriter",
           "WorkerStatus"]
__version__ = "0.1.0"


def _register_fsspec():
    try:
        import fsspec
    except ImportError:  # fsspec is optional
        return
    try:
        fsspec.register_implementation("shoal", "shoal.fsspec.ShoalFileSystem", clobber=True)
    except TypeError:  # older fsspec without clobber
        fsspec.register_implementation("shoal", "shoal.fsspec.ShoalFileSystem")


_register_fsspec()
