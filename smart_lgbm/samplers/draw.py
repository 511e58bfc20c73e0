"""The samplers' draw: the Python front of :mod:`._draw_kernels`.

:func:`draw_sample` draws row ``i`` with probability ``p_i`` (a :class:`.rate_solve.Solution`)
with counter-based random numbers and returns the drawn rows with their reweighted fitting
gradients (:class:`Fit`: plain, minus an anchor, or SecondOrder's regularised gradient), in
O(n) compiled passes without n-sized temporaries beyond the sample.  :func:`leaf_means` and
:func:`check_leaves` serve SecondOrder's regulariser.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from .buffers import Workspace
from .rate_solve import Solution, n_blocks

_KERNELS: Any = None


def _kernels() -> Any:
    """The draw's kernels (numba loads on first use)."""
    global _KERNELS
    if _KERNELS is None:
        from . import _draw_kernels as kernels

        _KERNELS = kernels
    return _KERNELS


@dataclass(frozen=True)
class Fit:
    """The gradient a drawn row fits before ``1/p``: ``source`` (``(n, K)``), optionally
    minus ``anchor``, optionally plus ``eta`` times the anchor's leaf means."""

    source: np.ndarray
    mode: int = 0
    anchor: np.ndarray | None = None
    leaves: np.ndarray | None = None
    means: np.ndarray | None = None
    eta: float = 0.0


def draw_sample(solution: Solution, h: np.ndarray, fit: Fit, rng: np.random.Generator | None, workspace: Workspace,
                squeeze: bool, key: np.uint64 | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw row ``i`` with probability ``p_i`` and return it with ``g~ / p_i``, ``h / p_i``.

    The uniforms come from one 64-bit key: ``key`` when given (the iteration's generator's
    first ``random_raw()``, :func:`smart_lgbm._engine.draw.draw_key`; ``rng`` is then not read),
    else taken from ``rng``; an empty draw is replaced by
    the single row minimising ``u_i / p_i`` (see ``_kernels.closest_row``).
    Returns ``(indices, grad, hess)`` of the sample; ``squeeze`` gives ``(m,)`` gradients
    instead of ``(m, 1)``.
    """
    k = _kernels()
    imp = solution.importance
    sol = (solution.c1, solution.c2, solution.rho)
    if key is None:
        if rng is None:
            raise TypeError("draw_sample needs a generator (rng) or its key")
        key = np.uint64(rng.bit_generator.random_raw())
    scratch = workspace.array("draw", imp.n, np.int32)
    nb = n_blocks(imp.n)
    counts, offsets = workspace.array("counts", nb, np.int64), workspace.array("offsets", nb, np.int64)
    m = k.draw(*imp.args(), *sol, key, scratch, counts, offsets)
    block = k.BLOCK
    if m == 0:
        row = k.closest_row(*imp.args(), *sol, key)
        scratch = np.array([row], dtype=np.int32)
        counts, offsets, m = np.ones(1, dtype=np.int64), np.zeros(1, dtype=np.int64), 1
    num_class = h.shape[1]
    src = fit.source
    anchor = fit.anchor if fit.anchor is not None else _no_rows(num_class, src.dtype, read_only=True)
    leaves = fit.leaves if fit.leaves is not None else _no_rows(num_class, np.dtype(np.int32))
    means = fit.means if fit.means is not None else _no_rows(0, np.dtype(np.float64))
    out_idx = np.empty(m, dtype=np.int32)
    out_g = np.empty((m, num_class), dtype=src.dtype)
    out_h = np.empty((m, num_class), dtype=h.dtype)
    k.gather(*imp.args(), *sol, scratch, counts, offsets, block,
             src, h, anchor, leaves, means, fit.eta, fit.mode, out_idx, out_g, out_h)
    if squeeze:
        out_g, out_h = out_g.reshape(m), out_h.reshape(m)
    return out_idx, out_g, out_h


@functools.cache
def _no_rows(num_class: int, dtype: np.dtype, read_only: bool = False) -> np.ndarray:
    """An empty ``(0, num_class)`` array standing for an unused gather input, made once
    (nothing can be written into an empty array, so one is shared by every draw)."""
    arr = np.empty((0, num_class), dtype=dtype)
    return _read_only(arr) if read_only else arr


def _read_only(arr: np.ndarray) -> np.ndarray:
    # anchors are read-only views of the history's ring buffers; numba compiles a kernel
    # once per array type, and read-only is part of the type
    arr.flags.writeable = False
    return arr


def leaf_means(values: np.ndarray, leaves: np.ndarray) -> np.ndarray:
    """``means[k, l]``: the mean of ``values[:, k]`` over the rows of leaf ``l`` in tree ``k``.

    ``values`` and ``leaves`` are ``(n, K)``; sums run over a fixed block partition, so the
    means do not depend on the number of threads.
    """
    n_leaves = int(leaves.max()) + 1 if leaves.size else 1
    return _kernels().leaf_means(values, leaves, n_leaves)


def check_leaves(leaves: object, shape: tuple[int, int], owner: str, name: str = "history.leaves") -> np.ndarray:
    """Each row's leaf per tree as C-contiguous int32 ``(n, K)``; refuses other shapes and negatives."""
    arr = np.asarray(leaves)
    n, num_class = shape
    expected = (n,) if num_class == 1 else (n, num_class)
    if arr.dtype.kind not in "iu" or arr.shape != expected:
        raise ValueError(f"{owner}: {name} must be an integer array of shape {expected}, got {arr.dtype} {arr.shape}")
    if arr.size and arr.min() < 0:
        raise ValueError(f"{owner}: {name} must be non-negative leaf indices")
    return np.ascontiguousarray(arr, dtype=np.int32).reshape(n, num_class)
