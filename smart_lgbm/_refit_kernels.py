"""Numba kernels of the leaf refit (:mod:`smart_lgbm.refit`).

Both run over every training row, in parallel:

* :func:`leaf_sums`: each leaf's sums of ``g`` and ``h`` over fixed blocks of ``BLOCK``
  rows, each block into its own table; the front adds the tables in block order, so the
  sums are the same doubles at any number of threads (the serial twin gives the same bits,
  :mod:`smart_lgbm._twins`).
* :func:`add_by_leaf`: each row's new output, read from its leaf, added to its score (each
  row written from that row alone).

Private module: the front checks shapes and dtypes.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ._twins import row_kernel
from .samplers.compiled import BLOCK


@row_kernel(rows=0, axis=0)
def leaf_sums(leaves, grad, hess, k, tables):
    """Fill ``tables`` (zeroed ``(n_blocks, 2, width)`` float64, one per ``BLOCK`` rows)
    with the sums of column ``k`` of ``grad``/``hess`` (float32 ``(n, K)``) over each
    block's rows by their leaf in column ``k`` of ``leaves`` (int32 ``(n, K)``, every leaf
    below ``width``)."""
    n = leaves.shape[0]
    for b in prange(tables.shape[0]):
        table = tables[b]
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            leaf = leaves[i, k]
            table[0, leaf] += np.float64(grad[i, k])
            table[1, leaf] += np.float64(hess[i, k])


@row_kernel(rows=0, axis=0)
def add_by_leaf(scores, leaves, values):
    """``scores[i, k] += values[k, leaves[i, k]]`` for every row ``i`` and tree ``k``."""
    n, num_trees = scores.shape
    for i in prange(n):
        for k in range(num_trees):
            scores[i, k] += values[k, leaves[i, k]]
