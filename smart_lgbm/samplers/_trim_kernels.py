"""Numba kernels of weight trimming's O(n) selection (:func:`.trimming.trim`).

Private module: the functions trust their inputs (validated by their Python fronts) and
run without bounds checks.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .._numba.kernel_constants import BLOCK, HIST_BLOCK
from .._numba.row_kernel import row_kernel
from ._importance_kernels import _columns_in_order, _row_weight

#: Bits of the trimming key resolved per histogram pass.
DIGIT_BITS = 12



@njit(cache=True, inline="always")
def _key(w, cell, cell_bits):
    """The bit pattern of ``w >= 0`` as int64: ordered exactly like the values."""
    cell[0] = w
    return cell_bits[0]


@row_kernel(rows=0)
def trim_histogram(n, h, shift_hi, prefix, shift_lo):
    """Histogram of the weights ``w_i = sum_k h_ik`` whose key has ``key >> shift_hi == prefix``,
    by the key bits ``[shift_lo, shift_hi)``.

    Returns ``(count, sums, kmin, kmax, n_bad)``: per digit the number of rows and the sum
    of their weights, the smallest and largest key in range, and the number of NaN,
    infinite or negative weights among all rows.
    """
    nbins = 1 << (shift_hi - shift_lo)
    mask = nbins - 1
    nb = (n + HIST_BLOCK - 1) // HIST_BLOCK
    cnt = np.zeros((nb, nbins), np.int64)
    sm = np.zeros((nb, nbins))
    bmin = np.full(nb, np.iinfo(np.int64).max)
    bmax = np.full(nb, -1)
    bbad = np.zeros((nb, 1), np.int64)
    for b in prange(nb):
        cell = np.empty(1)
        cell_bits = cell.view(np.int64)
        for i in range(b * HIST_BLOCK, min(n, (b + 1) * HIST_BLOCK)):
            w = _row_weight(h, i)
            if not (w >= 0.0 and not math.isinf(w)):
                bbad[b, 0] += 1
                continue
            key = _key(w, cell, cell_bits)
            if (key >> shift_hi) != prefix:
                continue
            d = (key >> shift_lo) & mask
            cnt[b, d] += 1
            sm[b, d] += w
            bmin[b] = min(bmin[b], key)
            bmax[b] = max(bmax[b], key)
    kmin = np.iinfo(np.int64).max
    kmax = -1
    for b in range(nb):
        kmin = min(kmin, bmin[b])
        kmax = max(kmax, bmax[b])
    return _columns_in_order(cnt), _columns_in_order(sm), kmin, kmax, _columns_in_order(bbad)[0]


@row_kernel(rows=0)
def trim_counts(n, h, tau):
    """Per block of ``BLOCK`` rows: how many weights have key below ``tau`` and equal to it."""
    nb = (n + BLOCK - 1) // BLOCK
    less = np.zeros(nb, np.int64)
    ties = np.zeros(nb, np.int64)
    for b in prange(nb):
        cell = np.empty(1)
        cell_bits = cell.view(np.int64)
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            key = _key(_row_weight(h, i), cell, cell_bits)
            if key < tau:
                less[b] += 1
            elif key == tau:
                ties[b] += 1
    return less, ties


@row_kernel(rows=0)
def trim_gather(n, g, h, tau, n_tied_drop, tie_start, offsets, out_idx, out_g, out_h):
    """Keep the rows with key above ``tau`` and those with key ``tau`` from the
    ``n_tied_drop``-th on (ties in row order; ``tie_start[b]`` ties precede block ``b``)."""
    nb = offsets.shape[0]
    num_class = g.shape[1]
    for b in prange(nb):
        cell = np.empty(1)
        cell_bits = cell.view(np.int64)
        rank = tie_start[b]
        at = offsets[b]
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            key = _key(_row_weight(h, i), cell, cell_bits)
            if key < tau:
                continue
            if key == tau:
                rank += 1
                if rank <= n_tied_drop:
                    continue
            out_idx[at] = i
            for k in range(num_class):
                out_g[at, k] = g[i, k]
                out_h[at, k] = h[i, k]
            at += 1
