"""Weight trimming's O(n) selection: the Python front of :mod:`._trim_kernels`."""

from __future__ import annotations

from typing import Any

import numpy as np

_KERNELS: Any = None


def _kernels() -> Any:
    """Weight trimming's kernels (numba loads on first use)."""
    global _KERNELS
    if _KERNELS is None:
        from . import _trim_kernels as kernels

        _KERNELS = kernels
    return _KERNELS


def trim(g: np.ndarray, h: np.ndarray, alpha: float, owner: str,
         squeeze: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weight trimming in O(n): drop the longest prefix of the rows ordered by
    ``(w_i, i)``, ``w_i = sum_k h_ik``, whose weights sum to at most ``alpha * sum(w)``,
    but never every row; the rest keep ``g, h`` unweighted.  Returns ``(indices, grad, hess)``.

    The boundary weight ``tau`` is found by histogram passes over the weights' bit patterns
    (12 bits per pass, at most 6 passes; one when all weights are equal), then the rows
    below ``tau`` are dropped and the rows equal to ``tau`` are dropped in row order while
    the sum allows: the same rows a stable sort by weight would drop.

    Raises
    ------
    ValueError
        Naming ``owner``, if a weight is NaN, infinite or negative.
    """
    k = _kernels()
    n = h.shape[0]
    shift_hi, prefix = 63, 0
    dropped_sum = 0.0  # weights of the rows known to be dropped
    budget = None
    tied_drop = 0
    while True:
        shift_lo = max(0, shift_hi - k.DIGIT_BITS)
        count, sums, kmin, kmax, n_bad = k.trim_histogram(n, h, shift_hi, prefix, shift_lo)
        if n_bad:
            raise ValueError(f"{owner}: weights (row sums of the hessian) must be finite and non-negative; "
                             f"{n_bad} are NaN, infinite or negative")
        if budget is None:
            budget = alpha * float(sums.sum())
        if kmin == kmax:  # one value left in range: drop as many of its rows as fit
            tau, tied = int(kmin), int(count.sum())
            tied_drop = _ties_that_fit(_value_of(tau), tied, budget - dropped_sum)
            break
        cumulative = dropped_sum + np.cumsum(sums)
        fits = cumulative <= budget
        if fits.all():  # (rounding only) the whole range fits: drop it all
            tau, tied_drop = int(kmax), n
            break
        d = int(np.argmin(fits))  # the digit holding the boundary
        dropped_sum = float(cumulative[d - 1]) if d > 0 else dropped_sum
        prefix = (prefix << (shift_hi - shift_lo)) | d
        shift_hi = shift_lo
        if shift_hi == 0:  # a single key: the digit was the last bits
            tau = prefix
            tied_drop = _ties_that_fit(_value_of(tau), int(count[d]), budget - dropped_sum)
            break
    less, ties = k.trim_counts(n, h, np.int64(tau))
    n_ties = int(ties.sum())
    tied_drop = min(tied_drop, n_ties)
    if int(less.sum()) + tied_drop >= n:  # never trim every row: keep the last in (w, i) order
        tied_drop = n_ties - 1
    tie_start = np.zeros_like(ties)
    np.cumsum(ties[:-1], out=tie_start[1:])
    kept = np.full(less.shape[0], k.BLOCK, dtype=np.int64)
    kept[-1] = n - k.BLOCK * (less.shape[0] - 1)
    kept -= less + np.clip(tied_drop - tie_start, 0, ties)
    offsets = np.zeros_like(kept)
    np.cumsum(kept[:-1], out=offsets[1:])
    m = int(kept.sum())
    out_idx = np.empty(m, dtype=np.int32)
    out_g = np.empty((m, g.shape[1]), dtype=g.dtype)
    out_h = np.empty((m, h.shape[1]), dtype=h.dtype)
    k.trim_gather(n, g, h, np.int64(tau), tied_drop, tie_start, offsets, out_idx, out_g, out_h)
    if squeeze:
        out_g, out_h = out_g.reshape(m), out_h.reshape(m)
    return out_idx, out_g, out_h


def _value_of(key: int) -> float:
    return float(np.array([key], dtype=np.int64).view(np.float64)[0])


def _ties_that_fit(value: float, count: int, room: float) -> int:
    """How many rows of weight ``value`` fit in ``room`` (all of them when ``value`` is 0)."""
    if value == 0.0:
        return count if room >= 0.0 else 0
    c = max(0, min(count, int(room // value)))
    while c > 0 and c * value > room:  # guard the division's rounding
        c -= 1
    while c < count and (c + 1) * value <= room:
        c += 1
    return c
