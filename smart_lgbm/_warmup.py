""":func:`smart_lgbm.warmup`: compile the recommended methods' kernels once, ahead of time.

numba compiles each kernel on its first call and keeps the machine code in its on-disk
cache (the package's ``__pycache__``, or ``NUMBA_CACHE_DIR``), so that only the first
process of an environment pays for it.  :func:`warmup` pays it up front, for a Docker
image, a CI job or a Dask worker's set-up: it trains a few rounds on tiny synthetic data
with every method ``sampler="auto"`` can choose on large data, for every built-in task, on
dense float64, dense float32 and sparse CSR features, with a validation set, once with the
row kernels' serial twins and once with their parallel twins
(:func:`smart_lgbm._numba.row_kernel.parallel_from`), the two in processes side by side
where the machine has two cores or more.  In an environment whose cache
already holds them it only loads them (a few seconds).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import lightgbm as lgb
import numpy as np

from ._numba.notice import quiet
from ._numba.row_kernel import parallel_from
from .samplers import MVS, FirstOrder, Sampler

__all__ = ["warmup"]

logger = logging.getLogger("smart_lgbm")

#: Rows of the synthetic data (below the parallel twins' threshold: ``parallel_from(0)``
#: chooses the twin), features, rounds.
_ROWS, _FEATURES, _ROUNDS = 600, 6, 4


def _samplers(task: str) -> list[tuple[str, Sampler]]:
    """The methods ``sampler="auto"`` chooses for ``task`` on large data
    (:data:`smart_lgbm.samplers.auto.RULES`): for LambdaRank ``MVS(rate="auto")`` on dense
    features and ``FirstOrder(rate=0.1, refit_leaves=True)`` on sparse ones; for the other
    tasks ``FirstOrder(rate="auto", refit_leaves=True)``, and ``FirstOrder(rate=0.1,
    refit_leaves=True)`` for tables with categorical columns."""
    refit = ("FirstOrder(rate=0.1, refit_leaves=True)", FirstOrder(rate=0.1, refit_leaves=True))
    if task == "lambdarank":
        return [('MVS(rate="auto")', MVS(rate="auto")), refit]
    return [('FirstOrder(rate="auto", refit_leaves=True)', FirstOrder(rate="auto", refit_leaves=True)), refit]


def _task(task: str, rng: np.random.Generator) -> tuple[dict[str, Any], np.ndarray, np.ndarray, list[int] | None]:
    """Parameters, features, labels and query sizes of a small synthetic problem."""
    X = rng.normal(size=(_ROWS, _FEATURES))
    score = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(scale=0.5, size=_ROWS)
    params: dict[str, Any] = {"objective": task, "verbosity": -1, "seed": 0, "num_leaves": 7,
                              "min_data_in_leaf": 5}
    group = None
    if task == "binary":
        y = (score > 0).astype(np.float64)
    elif task == "multiclass":
        y = np.digitize(score, [-0.7, 0.7]).astype(np.float64)
        params["num_class"] = 3
    elif task == "lambdarank":
        y = np.clip(np.round(score + 1.5), 0, 4)
        group = [20] * (_ROWS // 20)
    else:
        y = score
    return params, X, y, group


def _entries() -> Iterator[tuple[str, dict[str, Any], Any, np.ndarray, list[int] | None, Sampler]]:
    """(label, params, features, labels, groups, sampler) of every training :func:`warmup` runs."""
    rng = np.random.default_rng(0)
    for task in ("binary", "multiclass", "regression", "lambdarank"):
        params, X, y, group = _task(task, rng)
        inputs: list[tuple[str, Any]] = [("dense float64", X)]
        if task == "binary":
            import scipy.sparse

            inputs += [("dense float32", X.astype(np.float32)), ("sparse CSR", scipy.sparse.csr_matrix(X))]
        for storage, data in inputs:
            for name, sampler in _samplers(task):
                yield f"{task}, {storage}, {name}", params, data, y, group, sampler


_TWINS = (("serial twins", None), ("parallel twins", 0))


def _train_twins(twins: str, progress: Callable[[str], None] | None = None) -> list[str]:
    """Every training of :func:`warmup` with one kind of row-kernel twin; what was trained
    (task, storage, sampler, twins), one line each."""
    from .engine import train

    threshold = dict(_TWINS)[twins]
    done: list[str] = []
    with quiet():  # (warmup says what it compiles: no first-compilation notice)
        for label, params, data, y, group, sampler in _entries():
            line = f"warmup: {label}, {twins}"
            logger.info(line)
            if progress is not None:
                progress(line)
            start = time.perf_counter()
            train_set = lgb.Dataset(data, y, group=group, free_raw_data=False)
            valid = lgb.Dataset(data, y, group=group, reference=train_set)
            if threshold is None:
                train(params, train_set, _ROUNDS, sampler=sampler, valid_sets=[valid])
            else:
                with parallel_from(threshold):
                    train(params, train_set, _ROUNDS, sampler=sampler, valid_sets=[valid])
            logger.debug("%s: %.2f s", line, time.perf_counter() - start)
            done.append(f"{label}, {twins}")
    return done


def warmup(progress: Callable[[str], None] | None = None, processes: int | None = None) -> list[str]:
    """Compile (or load from numba's on-disk cache) the kernels of the recommended methods.

    Trains a few rounds on tiny synthetic data with each method ``sampler="auto"`` chooses
    on large data (``FirstOrder(rate="auto", refit_leaves=True)`` and ``FirstOrder(rate=0.1,
    refit_leaves=True)`` for binary, multiclass and regression; ``MVS(rate="auto")`` and
    ``FirstOrder(rate=0.1, refit_leaves=True)`` for LambdaRank; binary also on float32 and
    sparse CSR features), with a validation set, with the serial and the
    parallel twin of every row kernel.  Afterwards the first training of those methods in
    any process of this environment starts without compiling.  The command line's
    ``smart-lgbm warmup`` calls it.

    Parameters
    ----------
    progress : callable, optional
        Called with a line of text before each training (the command line prints them);
        each is also logged at INFO on the ``smart_lgbm`` logger.  With several processes
        the lines of each come when it finishes.
    processes : int, optional
        Processes that compile side by side: the serial twins' trainings in one, the
        parallel twins' in another (numba compiles on one core; each process writes the
        kernels it compiles into the shared on-disk cache).  Default: 2 where the machine
        has two or more cores, else 1; 1 trains everything in this process.

    Returns
    -------
    list of str
        What was trained, one line each (task, storage, sampler, twins).
    """
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable or None, got {type(progress).__name__}")
    if processes is None:
        processes = 2 if (os.cpu_count() or 1) > 1 else 1
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise ValueError(f"processes must be an int >= 1 or None, got {processes!r}")
    kinds = [twins for twins, _ in _TWINS]
    if processes == 1:
        done: list[str] = []
        for twins in kinds:
            done += _train_twins(twins, progress)
        return done
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawn: fresh interpreters (no fork of this process's OpenMP and numba thread pools)
    with ProcessPoolExecutor(min(processes, len(kinds)), mp_context=multiprocessing.get_context("spawn")) as pool:
        shares = [pool.submit(_train_twins, twins) for twins in kinds]
        done = []
        for share in shares:
            lines = share.result()
            done += lines
            for line in lines:
                if progress is not None:
                    progress(f"warmup: {line}")
    return done
