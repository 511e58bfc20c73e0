"""How the package's kernels use numba's on-disk cache: locked index writes, and no cache
where none can be written.

**Locked index writes.**  numba keeps one index file per cached function (signature ->
data file) beside the data files.  Saving an entry reads the index, takes the first free
data-file number, writes the index, then the data file (``IndexDataCacheFile.save``), with
no lock between processes.  Two processes that compile one kernel for different signatures
at the same moment (``smart_lgbm.warmup``'s and ``smart-lgbm compare``'s compile processes,
several Dask workers or test processes on one machine) can both take the same number: the
index can then name one signature's data file for the other signature, and a later process
runs machine code compiled for other argument types (a crash, or wrong numbers).  Here a
package kernel's cache saves that whole read-number-write under an exclusive ``flock`` on
one lock file per cache folder, so each number goes to one signature.  Loads take no lock:
numba writes the index and data files whole under another name and renames them.  Where
``fcntl`` is missing (Windows) saves are numba's own.

**No cache where none can be written.**  A read-only install whose user cache folder
cannot be written either (``HOME=/`` as a non-root user in a container, an unwritable
``NUMBA_CACHE_DIR``): numba refuses every ``cache=True`` function there ("no locator
available"), so ``import smart_lgbm`` itself would fail.  There the package's kernels
compile without the cache (in every process), and a
:class:`~smart_lgbm.exceptions.NoCacheWarning` says so once, naming ``NUMBA_CACHE_DIR``.

Both work through one wrapper of numba's ``Dispatcher.enable_caching``, installed by
``import smart_lgbm`` before any kernel module is imported (:func:`install`).  It changes
only dispatchers whose function is defined in this package; every other numba function
caches as numba does.  This reaches into numba internals (numba 0.6x); a numba without
them keeps its own behaviour.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # (Windows: numba's own unlocked saves)
    fcntl = None  # type: ignore[assignment]

#: the lock file each cache folder gets for its index writes
LOCK_NAME = "smart_lgbm-index.lock"

#: numba's own ``Dispatcher.enable_caching``, once :func:`install` has wrapped it
_ENABLE_CACHING: Any = None
_PACKAGE = str(Path(__file__).resolve().parents[1])
_warned = False


@contextlib.contextmanager
def folder_lock(folder: str) -> Iterator[None]:
    """Hold an exclusive lock on ``folder``'s :data:`LOCK_NAME` (blocks until it is free;
    released when the block ends, or by the system when the process dies).

    A lock file this process may only read (another user's, in a shared cache folder) still
    locks: ``flock`` needs no write access.  Where none can be opened or made, the block runs
    unlocked, as numba's own save does.
    """
    path = os.path.join(folder, LOCK_NAME)
    fd = -1
    if fcntl is not None:
        for flags in (os.O_RDWR | os.O_CREAT, os.O_RDONLY):
            try:
                fd = os.open(path, flags, 0o666)
                break
            except OSError:
                continue
    if fd < 0:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # (a file system without flock: unlocked, as numba's own save)
            pass
        yield
    finally:
        os.close(fd)  # (closing the descriptor releases the lock)


def _locked_save(cache_file: Any, save: Any) -> Any:
    """``cache_file.save``, run under its cache folder's :func:`folder_lock`."""

    @functools.wraps(save)
    def locked(key: Any, data: Any) -> Any:
        with folder_lock(cache_file._cache_path):
            return save(key, data)

    return locked


def lock_index_writes(dispatcher: Any) -> bool:
    """Make the saves of ``dispatcher``'s cache entries hold their folder's lock (module
    notes).  Whether they do (False: no cache, or a numba without these internals)."""
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    if cache_file is None or fcntl is None or not hasattr(cache_file, "_cache_path"):
        return False
    if not getattr(cache_file.save, "_smart_lgbm_locked", False):
        cache_file.save = _locked_save(cache_file, cache_file.save)
        cache_file.save._smart_lgbm_locked = True
    return True


@functools.cache
def _cacheable(source: str) -> bool:
    """Whether one of numba's cache locators can keep the kernels of the module file
    ``source`` on disk: the test numba makes when a ``cache=True`` function is defined."""
    try:
        from numba.core import caching
    except ImportError:
        return True
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    classes = getattr(impl, "_locator_classes", None)
    if classes is None:
        return True  # (a numba without the list: let it decide)
    for cls in classes:
        try:
            if cls.from_function(can_cache, source) is not None:  # (any plain function of the package)
                return True
        except Exception:  # noqa: BLE001 - a locator that cannot judge this file: the next one
            continue
    return False


def can_cache(source: str) -> bool:
    """Whether numba can keep the compiled kernels of the module file ``source`` on disk."""
    return _cacheable(os.path.abspath(source))


def _enable_caching(dispatcher: Any) -> None:
    """numba's ``Dispatcher.enable_caching`` (``cache=True``); for the package's kernels, with
    locked index writes, or no cache at all where none can be written (module notes)."""
    global _warned
    try:
        source = inspect.getfile(dispatcher.py_func)
    except (TypeError, AttributeError):
        source = ""
    if not (source and os.path.abspath(source).startswith(_PACKAGE + os.sep)):
        _ENABLE_CACHING(dispatcher)
        return
    if not can_cache(source):
        if not _warned:
            _warned = True
            import numba

            from ..exceptions import NoCacheWarning

            where = (f"NUMBA_CACHE_DIR={numba.config.CACHE_DIR!r} cannot be written"  # type: ignore[attr-defined]
                     if getattr(numba.config, "CACHE_DIR", None) else
                     "the package folder and numba's user cache folder are read-only")
            warnings.warn(f"numba can write no cache for smart_lgbm's compiled kernels here ({where}): they "
                          "compile in every process; set NUMBA_CACHE_DIR to a writable folder to keep them",
                          NoCacheWarning, stacklevel=2)
        return
    _ENABLE_CACHING(dispatcher)
    lock_index_writes(dispatcher)


def install() -> bool:
    """Wrap numba's ``Dispatcher.enable_caching`` for the package's kernels (module notes),
    once per process.

    Returns
    -------
    bool
        Whether it is wrapped (False on a numba without the method).
    """
    global _ENABLE_CACHING
    if _ENABLE_CACHING is not None:
        return True
    try:
        from numba.core import dispatcher
    except ImportError:  # (a numba without it: numba's own caching rules)
        return False
    if not hasattr(dispatcher.Dispatcher, "enable_caching"):
        return False
    _ENABLE_CACHING = dispatcher.Dispatcher.enable_caching
    setattr(dispatcher.Dispatcher, "enable_caching", _enable_caching)  # noqa: B010 (numba's method)
    return True
