"""Numba kernels of the samplers' rate solve: scan, histogram bracket, capping rounds.

Private module: the functions trust their inputs (validated by their Python fronts) and
run without bounds checks.

:mod:`.rate_solve` is their front (it says what each pass is for); the row functions and
the conventions they share are :mod:`._importance_kernels`'.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .._numba.kernel_constants import BLOCK, HIST_BLOCK
from .._numba.row_kernel import row_kernel
from ._importance_kernels import _block_rows, _columns_in_order, _prob, _score, pow2_pair, scan_row, scan_totals, scan_values

#: Rate-solve histogram: OCTAVES octaves below the largest importance, SUB buckets each;
#: bucket 0 holds the largest t, index NBUCKET everything below 2**-OCTAVES.
OCTAVES = 64
SUB = 32
NBUCKET = OCTAVES * SUB


@row_kernel(rows=1)
def scan(kind, n, g, h, buf, lam, want_sum, plain, bmax, bpos, bbad, bexp, bsum):
    """One pass over the importances.

    Returns ``(smax, n_pos, n_bad, exponent, total)``: the largest importance, how many are
    positive, how many are NaN, infinite or negative, the exponent ``e`` with
    ``smax = f * 2**e``, ``f`` in [0.5, 1), and (if ``want_sum``) ``sum_i s_i * 2**-e``.
    Each block scales its own sum by its own largest power of two, so no sum overflows or
    loses bits to underflow whatever the scale of the importances; with ``plain`` (the
    importances are float32 values, or sums or norms of a few: their float64 sum can neither
    overflow nor lose them to underflow) each block sums in the same pass instead.

    ``bmax``, ``bpos``, ``bbad``, ``bexp``, ``bsum``: the per-block values, one entry per
    ``BLOCK`` rows, zeroed by the caller (:func:`smart_lgbm.samplers.rate_solve.scan_blocks`).
    No kernel of a first binary run allocates: numba compiles its ``np.zeros``/``np.empty``
    implementations once per process, a few tenths of a second of the first call.
    """
    nb = (n + BLOCK - 1) // BLOCK
    for b in prange(nb):
        lo = b * BLOCK
        hi = min(n, lo + BLOCK)
        mx = 0.0
        pos = 0
        bad = 0
        acc = 0.0
        for i in range(lo, hi):
            mx, pos, bad, acc = scan_row(_score(kind, g, h, buf, lam, i), mx, pos, bad, acc)
        bmax[b] = mx
        bpos[b] = pos
        bbad[b] = bad
        if plain:
            bsum[b] = acc  # exponent 0: scaled by the global exponent below
        elif want_sum and mx > 0.0 and bad == 0:
            e = math.frexp(mx)[1]
            c1, c2 = pow2_pair(-e)
            acc = 0.0
            for i in range(lo, hi):
                s = _score(kind, g, h, buf, lam, i)
                if s > 0.0:
                    acc += (s * c1) * c2
            bexp[b] = e
            bsum[b] = acc
    return scan_totals(bmax, bpos, bbad, bexp, bsum, want_sum)


@row_kernel(rows=1)
def scan_store(kind, n, g, h, buf, lam, want_sum, bmax, bpos, bbad, bexp, bsum, out,
               lo_s, hi_s, scratch, counts, babove, bbelow):
    """:func:`scan` of importances it may sum plainly, storing each ``s_i`` in ``out``.

    The rate solve's later passes (histogram, capping rounds, draw, gather) then read
    ``out`` as a BUFFER importance, the same doubles, instead of recomputing them: MVS's
    square roots once per iteration instead of once per pass.  Each block computes its
    importances first (a loop free of the sum's serial chain) and then scans them from
    cache, in row order as :func:`scan` does.

    With ``lo_s < hi_s`` each block then also does :func:`window_rows`'s work on the
    importances in cache (``scratch``, ``counts``, ``babove``, ``bbelow``, per block; the
    window in the importances' own units): the first pass of the rate solve from a guess,
    without a pass of its own.
    """
    nb = (n + BLOCK - 1) // BLOCK
    windowed = lo_s < hi_s
    for b in prange(nb):
        lo = b * BLOCK
        hi = min(n, lo + BLOCK)
        gb, hb, bb = _block_rows(g, h, buf, lo, hi)
        ob = out[lo:hi]
        for j in range(hi - lo):
            ob[j] = _score(kind, gb, hb, bb, lam, j)
        mx, pos, bad, acc = scan_values(ob, False)
        bmax[b] = mx
        bpos[b] = pos
        bbad[b] = bad
        bsum[b] = acc  # exponent 0: scaled by the global exponent below
        if windowed:
            ws = scratch[lo:hi]
            c = 0
            over = 0
            under = 0.0
            for j in range(hi - lo):
                v = ob[j]
                ws[c] = lo + j  # (branch-free, as in draw: kept when inside)
                c += np.int64(v >= lo_s and v < hi_s)
                over += np.int64(v >= hi_s)
                under += v if v < lo_s else 0.0
            counts[b] = c
            babove[b] = over
            bbelow[b] = under
    return scan_totals(bmax, bpos, bbad, bexp, bsum, want_sum)


@njit(cache=True, inline="always")
def _bucket(t):
    """Histogram bucket of ``0 < t < 1``: 0 for the largest values, NBUCKET below 2**-OCTAVES."""
    m, e = math.frexp(t)
    octave = -e
    if octave >= OCTAVES:
        return NBUCKET
    sub = int((m - 0.5) * (2 * SUB))
    return octave * SUB + (SUB - 1 - sub)


@njit(cache=True)
def bucket_edges(j):
    """``(lower, upper)`` edge of the values bucket ``j < NBUCKET`` holds."""
    octave = j // SUB
    sub = SUB - 1 - j % SUB
    scale = math.ldexp(1.0, -octave)
    return (0.5 + sub / (2.0 * SUB)) * scale, (0.5 + (sub + 1) / (2.0 * SUB)) * scale


@row_kernel(rows=1)
def scaled_histogram(kind, n, g, h, buf, lam, c1, c2):
    """Count and sum of the scaled importances ``t`` per bucket (see :func:`_bucket`)."""
    nb = (n + HIST_BLOCK - 1) // HIST_BLOCK
    cnt = np.zeros((nb, NBUCKET + 1), np.int64)
    sm = np.zeros((nb, NBUCKET + 1))
    for b in prange(nb):
        for i in range(b * HIST_BLOCK, min(n, (b + 1) * HIST_BLOCK)):
            t = (_score(kind, g, h, buf, lam, i) * c1) * c2
            if t > 0.0:  # (a positive importance 2**1074 times below the largest underflows to 0)
                j = _bucket(t)
                cnt[b, j] += 1
                sm[b, j] += t
    return _columns_in_order(cnt), _columns_in_order(sm)


@njit(cache=True)
def bracket(count, total, m):
    """Newton start for ``sum_i min(1, rho t_i) = m`` from the bucket histogram.

    Walks the buckets from the largest values down to the first whose lower edge ``v``
    gives ``f(1/v) >= m``: the solution's threshold ``1/rho`` lies in that bucket, every
    bucket above is capped, every bucket below is free.  Returns ``(rho, capped, free_sum,
    exact)``: ``rho`` solves the equation if none of that bucket's rows is capped, which
    ``exact`` confirms when ``rho`` times the bucket's upper edge is at most 1; otherwise
    ``rho`` is a start from below for Newton's iteration (``capped``/``free_sum`` are the
    count and sum behind it).
    """
    below = np.zeros(NBUCKET + 2)
    for j in range(NBUCKET, -1, -1):
        below[j] = below[j + 1] + total[j]
    capped = 0
    for j in range(NBUCKET):
        if count[j] == 0:
            continue
        lower, upper = bucket_edges(j)
        if capped + count[j] + below[j + 1] / lower >= m:
            free_sum = below[j]  # > 0: bucket j holds positive values
            rho = (m - capped) / free_sum
            return rho, capped, free_sum, rho * upper <= 1.0
        capped += count[j]
    free_sum = below[NBUCKET]
    if free_sum <= 0.0:  # (rounding only) no bracket: the caller falls back to sorting
        return np.nan, capped, free_sum, False
    return (m - capped) / free_sum, capped, free_sum, False


@row_kernel(rows=1)
def cap_round(kind, n, g, h, buf, lam, c1, c2, rho, bcap, bsum, blow, bhigh):
    """``(capped, free_sum, lowest_capped, highest_free)`` at ``rho``: how many rows have
    ``rho t >= 1``, the sum of the other ``t``, the smallest capped ``t`` (``inf`` if none)
    and the largest free ``t`` (0 if none).

    The two bounds tell whether the capped set is the one of another ``rho``: it is exactly
    when that ``rho`` caps the lowest and leaves the highest free (``rho t`` grows with ``t``).
    ``bcap`` (int64), ``bsum``, ``blow`` and ``bhigh`` (float64), one entry per ``BLOCK`` rows:
    the per-block values, written here (the caller allocates them: see :func:`scan`)."""
    nb = (n + BLOCK - 1) // BLOCK
    for b in prange(nb):
        count = 0
        acc = 0.0
        lowest = np.inf
        highest = 0.0
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            # branch-free (whether a row is capped is close to random): adding 0.0 leaves
            # the sum's bits as they were
            t = (_score(kind, g, h, buf, lam, i) * c1) * c2
            capped = rho * t >= 1.0  # (t = 0 is never capped: rho is finite here)
            count += np.int64(capped)
            acc += 0.0 if capped else t
            lowest = min(lowest, t if capped else np.inf)
            highest = max(highest, 0.0 if capped else t)
        bcap[b] = count
        bsum[b] = acc
        blow[b] = lowest
        bhigh[b] = highest
    capped = np.int64(0)
    free_sum = 0.0
    low = np.inf
    high = 0.0
    for b in range(nb):  # in block order, as _columns_in_order adds them
        capped += bcap[b]
        free_sum += bsum[b]
        low = min(low, blow[b])
        high = max(high, bhigh[b])
    return capped, free_sum, low, high


@row_kernel(rows=1)
def window_rows(kind, n, g, h, buf, lam, c1, c2, lo_t, hi_t, scratch, counts, babove, bbelow):
    """``(above, below)``: how many rows have ``t >= hi_t`` and the sum of the ``t`` under
    ``lo_t``; the rows in between (the window) go, in order, to ``scratch[b * BLOCK:]``, their
    number per block to ``counts``.

    The first pass of the rate solve from a guess (``rate_solve._settle_from_guess``): the
    window around the guess's threshold holds the root's threshold when the guess is close,
    and the root is then found on the window's rows alone.  Only where the window
    holds it: the sums here are a guide, the answer comes from :func:`cap_round`'s sums.
    """
    nb = (n + BLOCK - 1) // BLOCK
    for b in prange(nb):
        lo = b * BLOCK
        hi = min(n, lo + BLOCK)
        gb, hb, bb = _block_rows(g, h, buf, lo, hi)
        out = scratch[lo:hi]
        c = 0
        over = 0
        under = 0.0
        for j in range(hi - lo):
            t = (_score(kind, gb, hb, bb, lam, j) * c1) * c2
            inside = t >= lo_t and t < hi_t
            out[c] = lo + j  # (branch-free, as in draw: kept when inside)
            c += np.int64(inside)
            over += np.int64(t >= hi_t)
            under += t if t < lo_t else 0.0
        counts[b] = c
        babove[b] = over
        bbelow[b] = under
    above = np.int64(0)
    below = 0.0
    for b in range(nb):
        above += babove[b]
        below += bbelow[b]
    return above, below


@njit(cache=True)
def window_root(kind, n, g, h, buf, lam, c1, c2, scratch, counts, block, above, below, m, guess, max_rounds):
    """The root of ``sum_i min(1, rho t_i) = m`` on the window :func:`window_rows` gathered
    (every row above it capped, every row below it free), by Newton's iteration from
    ``guess``; NaN when it does not settle in ``max_rounds`` (the caller checks that its
    threshold ``1/rho`` lies inside the window)."""
    w = 0
    for b in range(counts.shape[0]):
        w += counts[b]
    t = np.empty(w)
    at = 0
    for b in range(counts.shape[0]):
        for j in range(counts[b]):
            v = (_score(kind, g, h, buf, lam, scratch[b * block + j]) * c1) * c2
            t[at] = v
            at += 1
    rho = guess
    previous = np.int64(-1)
    for _ in range(max_rounds):
        capped = above
        free_sum = below
        for j in range(w):
            v = t[j]
            if rho * v >= 1.0:
                capped += 1
            else:
                free_sum += v
        if capped == previous:
            return rho
        if capped >= m or free_sum <= 0.0:
            return np.nan
        previous = capped
        rho = (m - capped) / free_sum
    return np.nan


@njit(cache=True)
def same_bucket(a, b):
    """Whether ``0 < a, b < 1`` fall in one bucket of the rate solve's histogram."""
    return _bucket(a) == _bucket(b)


@njit(cache=True)
def sorted_rho(kind, n, g, h, buf, lam, c1, c2, m):
    """Exact rate solve by sorting (O(n log n)): the fallback for pathological spectra."""
    t = np.empty(n)
    n_pos = 0
    for i in range(n):
        ti = (_score(kind, g, h, buf, lam, i) * c1) * c2
        if ti > 0.0:
            t[n_pos] = ti
            n_pos += 1
    t = np.sort(t[:n_pos])  # ascending
    prefix = np.zeros(n_pos + 1)
    for j in range(n_pos):
        prefix[j + 1] = prefix[j] + t[j]
    best = m / prefix[n_pos]
    for k in range(n_pos):  # k largest rows capped, the n_pos - k smallest free
        free = n_pos - k
        rho = (m - k) / prefix[free]
        if rho <= 0.0:
            break
        best = rho
        if rho * t[free - 1] <= 1.0 and (k == 0 or rho * t[free] >= 1.0):
            return rho
    return best


@row_kernel(rows=1)
def probabilities(kind, n, g, h, buf, lam, c1, c2, rho, out):
    """``p_i`` of every row into ``out`` (for the public ``probabilities`` methods)."""
    for i in prange(n):
        out[i] = _prob(_score(kind, g, h, buf, lam, i), c1, c2, rho)


# Newton's capping rounds on small data, all rounds in one call: each round sums the free
# ``t`` of each ``BLOCK`` of rows in row order with the same expression as :func:`cap_round`
# (``acc += 0.0 if capped else t``: adding 0.0 leaves the bits of a sum as they were) and
# adds the blocks' counts and sums in block order; every ``rho`` is formed from those by the
# same operations as one call of :func:`cap_round` per round from Python would, without
# numba's type checks of 14 arguments and a Python loop per round
# (``tests/test_sampler_kernels.py`` compares the two on many spectra).  A round that ends
# the solve needs only its count: each round counts first (a loop that vectorises) and sums
# only when the iteration goes on, since a block's sum is a serial chain of adds that no
# reordering may shorten.


@row_kernel(rows=1)
def cap_rounds(kind, n, g, h, buf, lam, c1, c2, m, rho, capped, guess, max_rounds, bcap, bsum):
    """``rho`` solving ``sum_i min(1, rho t_i) = m`` by capping rounds from ``rho``, or NaN
    when they do not settle (the caller then sorts: ``_kernels.sorted_rho``).

    ``rho``: Newton's start, ``m / sum(t)`` or the histogram's bracket, and ``capped``
    the count behind it (0 for the cold start); ``guess``: a ``rho`` to take one round at
    first when it is above ``rho`` (the previous iteration's; pass 0.0 for none); at most
    ``max_rounds`` rounds after it.  ``bcap`` (int64) and ``bsum`` (float64), one entry
    per ``BLOCK`` rows: the per-block values, written here.

    The loop ``rate_solve._rate_rho`` would run in Python, step for step: a round at ``guess`` that
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
