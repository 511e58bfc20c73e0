"""Running a compiled kernel over a range of blocks on several threads.

The all-rows kernels are plain serial numba functions (``@njit(nogil=True, cache=True)``)
over a range of blocks ``[b0, b1)``; :func:`for_blocks` splits the blocks into one
contiguous share per thread, runs the first share on the calling thread and the others on
a small persistent pool, and returns when all are done.  Why not numba's
``parallel=True``: a parallel kernel takes several times longer to compile than the same
loop serial (numba's parfor passes and the gufunc it builds), and a new user, CI runner
or Dask worker pays that before the first tree (``scripts/bench_first_call.py``); the
kernels here release the GIL, so threads run them side by side just the same.

The blocks are a fixed partition of the rows, whatever the number of threads, and every
reduction combines per-block values in block order, so the results do not depend on the
thread count.

The thread count is numba's (``numba.get_num_threads()``, per calling thread; the engine
sets it from LightGBM's ``num_threads``).  Below :data:`MIN_ROWS_PER_THREAD` rows per
thread the work stays on the calling thread: handing a share to the pool costs tens of
microseconds, as much as a small data set's whole pass.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numba

#: Fewest rows (or row-equivalents of work) worth handing to another thread.  Tests lower
#: it to run their small data on several threads.
MIN_ROWS_PER_THREAD = 1 << 15

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                workers = max(1, int(numba.config.NUMBA_NUM_THREADS) - 1)
                _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="smart_lgbm")
    return _pool


def _forget_pool() -> None:
    # a forked child inherits the pool object but not its threads
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _requested() -> int:
    return numba.get_num_threads()


def num_threads(rows: int) -> int:
    """Threads worth using for ``rows`` rows of work: numba's thread count, fewer for small work."""
    share = rows // MIN_ROWS_PER_THREAD
    if share < 2:  # (asking numba costs microseconds: not for work that stays here anyway)
        return 1
    return max(1, min(_requested(), share))


def for_blocks(kernel: Callable[..., Any], nblocks: int, rows: int, *args: Any) -> None:
    """``kernel(b0, b1, *args)`` over contiguous shares of ``range(nblocks)``, one per thread.

    ``rows``: the work's size in rows (picks the thread count, see :func:`num_threads`).
    The calling thread runs the first share; an exception of any share is raised here after
    all shares have finished.
    """
    t = min(num_threads(rows), nblocks)
    if t <= 1:
        kernel(0, nblocks, *args)
        return
    pool = _executor()
    futures = [pool.submit(kernel, nblocks * i // t, nblocks * (i + 1) // t, *args) for i in range(1, t)]
    try:
        kernel(0, nblocks // t, *args)
    finally:
        for f in futures:
            f.result()
