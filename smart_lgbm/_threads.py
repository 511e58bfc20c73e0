"""Running a compiled kernel over a range of blocks on several threads.

The all-rows kernels are plain serial numba functions (``@njit(nogil=True, cache=True)``)
over a range of blocks ``[b0, b1)``; :func:`for_blocks` cuts the blocks into a few
contiguous pieces per thread, which the calling thread and a small persistent pool take in
turn, and returns when all are done.  Why not numba's
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

import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from collections.abc import Callable

import numba

#: Fewest rows (or row-equivalents of work) worth handing to another thread.  Tests lower
#: it to run their small data on several threads.
MIN_ROWS_PER_THREAD = 1 << 15
#: Pieces per thread the blocks are cut into (see :func:`for_blocks`).
PIECES_PER_THREAD = 4

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                workers = max(1, int(numba.config.NUMBA_NUM_THREADS) - 1)  # type: ignore[attr-defined]
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
    """``kernel(b0, b1, *args)`` over contiguous pieces of ``range(nblocks)`` on several threads.

    ``rows``: the work's size in rows (picks the thread count, see :func:`num_threads`).
    With ``t`` threads the blocks are cut into up to ``PIECES_PER_THREAD * t`` pieces that
    the threads take in turn, the calling thread among them: a thread slowed down (by
    another process, or LightGBM's OpenMP threads still spinning after the tree) takes
    fewer pieces instead of holding up the others.  An exception of any piece is raised
    here after all threads have finished.
    """
    t = min(num_threads(rows), nblocks)
    if t <= 1:
        kernel(0, nblocks, *args)
        return
    pieces = min(nblocks, PIECES_PER_THREAD * t)
    bounds = [nblocks * i // pieces for i in range(pieces + 1)]
    claim = itertools.count()  # next() is atomic under the GIL

    def work() -> None:
        while (i := next(claim)) < pieces:
            kernel(bounds[i], bounds[i + 1], *args)

    pool = _executor()
    futures = [pool.submit(work) for _ in range(t - 1)]
    try:
        work()
    finally:
        for f in futures:
            f.result()
