"""Numba kernel of the rate solve's capping rounds on small data, all rounds in one call.

Below ``compiled._HISTOGRAM_ROWS`` rows the rate solve (``compiled._rate_rho``) is Newton's
iteration on ``f(rho) = sum_i min(1, rho t_i)``: a capping round at the previous
iteration's ``rho`` (when it lies above the cold start), then rounds until the capped
count repeats (from ``_HISTOGRAM_ROWS`` rows on, the same rounds from the histogram's
bracket).  Called from Python, each round was one call of :func:`._kernels.cap_round`: on
a9a (32,561 rows, FirstOrder at rate 0.3) 2.8 calls an iteration on average (a development
run, 200 iterations), each paying numba's type checks of its 14 arguments and Python's
loop around it.  :func:`cap_rounds` runs the same rounds inside one call.

Same bits: each round sums the free ``t`` of each ``BLOCK`` of rows in row order, with the
same expression as :func:`._kernels.cap_round` (``acc += 0.0 if capped else t``: adding 0.0
leaves the bits of a sum as they were), and adds the blocks' counts and sums in block
order; every ``rho`` is formed from those by the same operations as the Python loop.
``tests/test_sampler_kernels.py`` compares it with that loop on many spectra.

A round that ends the solve needs only its count: each round counts first and sums only
when the count tells the iteration goes on (the answer is formed from the previous
round's sum).  The count vectorises; the sum of a block's free ``t`` is a serial chain of
adds that no reordering may shorten (it would change the bits), so skipping one chain an
iteration is most of what a round costs on two blocks.
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from .._numba.row_kernel import row_kernel
from ._kernels import BLOCK, _score


@row_kernel(rows=1)
def cap_rounds(kind, n, g, h, buf, lam, c1, c2, m, rho, capped, guess, max_rounds, bcap, bsum):
    """``rho`` solving ``sum_i min(1, rho t_i) = m`` by capping rounds from ``rho``, or NaN
    when they do not settle (the caller then sorts: ``_kernels.sorted_rho``).

    ``rho``: Newton's start, ``m / sum(t)`` or the histogram's bracket, and ``capped``
    the count behind it (0 for the cold start); ``guess``: a ``rho`` to take one round at
    first when it is above ``rho`` (the previous iteration's; pass 0.0 for none); at most
    ``max_rounds`` rounds after it.  ``bcap`` (int64) and ``bsum`` (float64), one entry
    per ``BLOCK`` rows: the per-block values, written here.

    The loop ``compiled._rate_rho`` ran in Python, step for step: a round at ``guess`` that
    caps fewer than ``m`` rows and leaves a positive free sum restarts Newton's iteration
    from its set; then each round at ``rho`` stops when it caps as many rows as the last
    (or at least ``m``: rows rounded onto ``p = 1``), else goes on from its own set.
    """
    nb = (n + BLOCK - 1) // BLOCK
    capped = np.int64(capped)
    at_guess = guess > rho
    rounds = 0
    while True:
        if at_guess:
            point = guess
        else:
            if rounds >= max_rounds or not (math.isfinite(rho) and rho > 0.0):
                return np.nan
            rounds += 1
            point = rho
            # the count first: a round whose count repeats ends the solve, and its sum is
            # never read (see the module notes)
            for b in prange(nb):
                count = 0
                for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
                    count += np.int64(point * ((_score(kind, g, h, buf, lam, i) * c1) * c2) >= 1.0)
                bcap[b] = count
            now_capped = np.int64(0)
            for b in range(nb):
                now_capped += bcap[b]
            if now_capped == capped or now_capped >= m:  # (the latter: rows rounded onto p = 1)
                return rho
        for b in prange(nb):
            count = 0
            acc = 0.0
            for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
                t = (_score(kind, g, h, buf, lam, i) * c1) * c2
                is_capped = point * t >= 1.0
                count += np.int64(is_capped)
                acc += 0.0 if is_capped else t
            bcap[b] = count
            bsum[b] = acc
        now_capped = np.int64(0)
        free_sum = 0.0
        for b in range(nb):  # in block order, as cap_round adds them
            now_capped += bcap[b]
            free_sum += bsum[b]
        if at_guess:
            at_guess = False
            if now_capped < m and free_sum > 0.0:  # else the guess was far too high: start cold
                capped = now_capped
                rho = (m - capped) / free_sum
            continue
        if free_sum <= 0.0:  # (rounding only)
            return np.nan
        capped = now_capped
        rho = (m - capped) / free_sum
