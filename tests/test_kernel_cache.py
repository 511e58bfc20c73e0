"""The package's kernels save numba cache entries under a lock between processes
(smart_lgbm._numba.kernel_cache).

numba's own save reads a function's cache index, takes the first free data-file number and
writes the index and then the data file, unlocked: two processes compiling one kernel for
different signatures at once can take the same number, and a later process then loads
machine code compiled for other argument types.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
import time

import pytest
from numba.core.caching import IndexDataCacheFile
from numba.core.dispatcher import Dispatcher

import smart_lgbm
from smart_lgbm._numba import kernel_cache

pytestmark = pytest.mark.skipif(kernel_cache.fcntl is None, reason="no fcntl: numba's own unlocked saves")


def _racing_saves(folder, locked):
    """Two cache-file objects of one function (as two processes hold), each saving its own
    signature, with numba's read-number-write window widened: what a later reader loads."""
    files = [IndexDataCacheFile(str(folder), "kernel-1.py311", ("stamp", 1)) for _ in range(2)]
    for cache_file in files:
        def slow_load(load=cache_file._load_index):
            index = load()
            time.sleep(0.3)  # the other process saves meanwhile
            return index
        cache_file._load_index = slow_load
        if locked:
            cache_file.save = kernel_cache._locked_save(cache_file, cache_file.save)
    threads = [threading.Thread(target=f.save, args=(f"signature {i}", f"code for {i}")) for i, f in enumerate(files)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    reader = IndexDataCacheFile(str(folder), "kernel-1.py311", ("stamp", 1))
    return {key: reader.load(key) for key in ("signature 0", "signature 1")}


def test_locked_saves_give_each_signature_its_own_data_file(tmp_path):
    """(With numba's unlocked save, ``locked=False``, this harness loses one of the two
    entries: both saves take data file 1.)"""
    assert _racing_saves(tmp_path, locked=True) == {"signature 0": "code for 0", "signature 1": "code for 1"}


def test_the_lock_excludes_a_second_holder_and_gives_way_where_it_cannot_be_made(tmp_path):
    order = []

    def second():
        with kernel_cache.folder_lock(str(tmp_path)):
            order.append("second")

    with kernel_cache.folder_lock(str(tmp_path)):
        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.2)
        order.append("first")
    thread.join()
    assert order == ["first", "second"]
    with kernel_cache.folder_lock(str(tmp_path / "missing")):  # no lock file can be made: unlocked
        order.append("unlocked")
    assert order[-1] == "unlocked"


def _package_dispatchers():
    for info in pkgutil.walk_packages(smart_lgbm.__path__, "smart_lgbm."):
        if info.name.startswith(("smart_lgbm.dask", "smart_lgbm.compare.plots")):
            continue  # (optional extras; they define no kernels)
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            twins = (getattr(value, "serial", None), getattr(value, "parallel", None))
            for candidate in (value, *twins):
                if isinstance(candidate, Dispatcher) and candidate.py_func.__module__ == info.name:
                    yield f"{info.name}.{name}", candidate


def test_every_cached_kernel_of_the_package_saves_under_the_lock():
    dispatchers = dict(_package_dispatchers())
    assert len(dispatchers) > 50
    cached = {name: d for name, d in dispatchers.items() if getattr(d, "_cache", None) is not None
              and hasattr(d._cache, "_cache_file")}
    assert cached, "no package kernel has numba's on-disk cache"
    unlocked = [name for name, d in cached.items() if not getattr(d._cache._cache_file.save, "_smart_lgbm_locked", False)]
    assert not unlocked


def test_functions_outside_the_package_keep_numbas_save(tmp_path):
    from numba import njit

    @njit(cache=True)
    def outside(x):  # (defined in a test module: not the package's)
        return x + 1

    assert not getattr(outside._cache._cache_file.save, "_smart_lgbm_locked", False)
