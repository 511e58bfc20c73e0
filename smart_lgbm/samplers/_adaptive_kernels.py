"""Numba kernel of the adaptive rate's per-leaf sums (:func:`smart_lgbm.samplers.adaptive.leaf_noise_sums`).

One pass over the drawn rows (the sample, not all rows), parallel over fixed blocks of
``BLOCK`` drawn rows: each block adds its rows in their drawn order into its own table, and
the tables are added in block order, so the sums do not depend on the number of threads
(the serial twin gives the same bits, :mod:`smart_lgbm._numba.row_kernel`).  Within one
block (fewer than ``BLOCK`` drawn rows) these are exactly numpy's ``bincount`` doubles, in
one pass and without the five passes and sample-sized temporaries ``bincount`` takes; the
table's width is guessed (the previous iteration's) rather than found by a pass of its own.

Private module: the front checks shapes and dtypes.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .._numba.row_kernel import row_kernel
from .._numba.kernel_constants import BLOCK


@row_kernel(rows=0, axis=0)
def leaf_sums_one_column(indices, fit_grad, fit_hess, hess, leaves, constant_p, use_constant, tables, tops):
    """``(sums, top)``: the ``(5, width)`` sums of one output column (K = 1, see
    ``leaf_noise_sums``) over the leaves below ``width``, and the largest leaf of any drawn row.

    ``tables``: zeroed ``(n_blocks, 5, width)`` float64, ``tops``: ``(n_blocks,)`` int64, one
    entry per ``BLOCK`` drawn rows, allocated by the caller: the kernel's one parallel region
    is its block loop (in a parallel kernel numba runs an ``np.zeros`` or an array's ``max``
    as a parallel region of its own, and on a busy machine each region waits for its
    threads, many times what the block loop itself takes).
    ``width`` is a guess of the number of leaves (the caller's previous answer): rows of a
    leaf at or past it add nothing here, and ``top >= width`` tells the caller to call again
    with ``top + 1``; the sums of the leaves below ``width`` do not depend on the guess.
    """
    m = indices.shape[0]
    nb = (m + BLOCK - 1) // BLOCK
    width = tables.shape[2]
    for b in prange(nb):
        table = tables[b]
        top = 0
        for i in range(b * BLOCK, min(m, (b + 1) * BLOCK)):
            row = indices[i]
            leaf = leaves[row]
            top = max(top, leaf)
            if leaf >= width:  # (the caller calls again, wider)
                continue
            h_fit = np.float64(fit_hess[i])
            if use_constant:
                p = constant_p
            else:
                p = np.float64(hess[row]) / h_fit if h_fit > 0.0 else 1.0
                p = min(max(p, 0.0), 1.0)
            keep = 1.0 - p
            inv_p = 1.0 / (p if p > 0.0 else 1.0)
            g = np.float64(fit_grad[i])
            table[0, leaf] += g
            table[1, leaf] += h_fit
            table[2, leaf] += g * g * keep
            table[3, leaf] += g * g * p
            table[4, leaf] += inv_p
        tops[b] = top
    top = 0
    for b in range(1, nb):  # in block order: the same doubles for any number of threads
        top = max(top, tops[b])
        for r in range(5):
            for j in range(width):
                tables[0, r, j] += tables[b, r, j]
    return tables[0], max(top, tops[0])
